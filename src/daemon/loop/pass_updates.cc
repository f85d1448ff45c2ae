// Rolling updates and rollbacks of a Pass (pass.h, Update): a service whose
// spec version moved replaces its placed tasks of older versions batch by
// batch, as its update_config (or, for a rollback, rollback_config) says
// (orchestrator/update_config.h), SwarmKit's updater in a pass's terms.
//
// A placed task of an older version is `outdated` (StartAndStop); a batch
// takes up to `parallelism` of them, lowest slot first, each replaced in its
// own slot (or on its node, for a global service): stop-first stops it and
// makes the new task; start-first makes the new task and stops the old one
// once the new one runs. A replacement is in flight until it has run for
// `monitor`; one that ends first is a failure. The next batch starts
// `delay` after the last replacement finished. Too many failures take the
// failure action: pause, continue, or roll back (the loop writes the
// service's previous template back as a new spec version, as `service
// rollback` does).
//
// A rebalance (docs/placement.md, "Rebalancing") is a spec version with the
// same template. Its tasks of older versions are candidates; when its
// rollout starts (and again after a pass that visits every task)
// ChooseMovers asks the engine which nodes hold more than it would place
// there now, and only that many candidates on each become outdated; the
// rest stay as they are. Movers are replaced start-first whatever
// update_config's order says, and stop only once their replacement has run
// for `monitor`, so the service never has fewer running tasks than when it
// began; a failure action of rollback pauses.
#include <map>

#include "daemon/loop/pass.h"
#include "daemon/registry/service_registry.h"

namespace berth::daemon {

using api::Json;

namespace {

bool EndedBadly(TaskState state) {
  return state == TaskState::kFailed || state == TaskState::kRejected;
}

// What a service's rollout is called in its status messages.
const char* KindOf(const StoredService& service) {
  return service.rolling_back ? "rollback" : service.rebalancing ? "rebalance" : "update";
}

}  // namespace

// A visited task of an older version: one not placed yet is simply replaced;
// a placed one waits for its service's rollout (Update).
void Pass::Outdated(TaskEntry& e, const std::string& service_id, const StoredService& service) {
  if (e.task.state < TaskState::kAssigned) {
    SetState(e, TaskState::kShutdown,
             "replaced by spec version " + std::to_string(service.spec_version), true);
    ++summary.stopped;
    return;
  }
  RolloutOf(service_id, service).outdated.insert(state_.PositionOf(e));
}

// A task of the version a rollout brings, seen by a pass that visits every
// task (berthd started, or the layout moved): one that has not run for the
// monitor period yet counts as in flight, so a restarted berthd does not
// replace more than `parallelism` at once.
void Pass::Young(TaskEntry& e, const std::string& service_id, const StoredService& service) {
  const auto it = state_.updates.find(service_id);
  if (it == state_.updates.end() || !it->second.active() ||
      it->second.spec_version != service.spec_version)
    return;
  ServiceUpdate& u = it->second;
  if (e.terminal() || e.task.spec_version.value_or(0) != service.spec_version) return;
  const uint32_t p = state_.PositionOf(e);
  const orchestrator::UpdateConfig& config =
      service.rolling_back ? service.rollback : service.update;
  if (e.task.state == TaskState::kRunning && e.task.started_at &&
      *e.task.started_at + config.monitor <= now_)
    return;
  for (const auto& [next, old] : u.in_flight)
    if (next == p) return;
  u.in_flight.emplace_back(p, ServiceUpdate::kNone);
}

// A visited task of a version before a rebalance, still meant to run on
// its node: a candidate to move, until the rebalance's movers are chosen.
void Pass::RebalanceCandidate(TaskEntry& e, const std::string& service_id,
                              const StoredService& service) {
  if (e.task.state < TaskState::kAssigned || e.task.desired > TaskState::kRunning) return;
  ServiceUpdate& u = RolloutOf(service_id, service);
  if (u.active() && !u.movers_chosen) u.candidates.insert(state_.PositionOf(e));
}

// Of a rebalance's candidates, each node gives up as many as it holds beyond
// the engine's target (FullView::RebalanceMoves), highest slot first; the
// others stay. The replacements go where the target has room (StartBatch).
// Without the full view (agents place the tasks) nothing moves.
void Pass::ChooseMovers(const std::string& service_id, const StoredService& service,
                        ServiceUpdate& u, const FullView* engine) {
  u.movers_chosen = true;
  std::vector<uint32_t> candidates(u.candidates.begin(), u.candidates.end());
  u.candidates.clear();
  if (engine == nullptr) {
    u.message = "rebalance skipped: with agents, the agents choose the nodes";
    return;
  }
  if (!service.spec || !service.replicas) return;
  FullView::Moves moves = engine->RebalanceMoves(service_id, service.spec, service.spec_version,
                                                 *service.replicas, now_);
  std::map<std::string, uint32_t>& excess = moves.from;
  for (const auto& [next, old] : u.in_flight)  // movers already on their way
    if (old != ServiceUpdate::kNone)
      if (auto it = excess.find(tasks_[old].task.node); it != excess.end() && it->second > 0)
        --it->second;
  u.room = std::move(moves.to);
  std::sort(candidates.begin(), candidates.end(), [&](uint32_t a, uint32_t b) {
    const StoredTask &x = tasks_[a].task, &y = tasks_[b].task;
    return std::tie(x.node, y.slot) < std::tie(y.node, x.slot);
  });
  for (uint32_t p : candidates) {
    const auto it = excess.find(tasks_[p].task.node);
    if (it == excess.end() || it->second == 0) continue;
    --it->second;
    u.outdated.insert(p);
  }
}

void Pass::ChooseAllMovers(const FullView& engine) {
  for (auto& [id, u] : state_.updates) {
    const auto svc = service_by_id_.find(id);
    if (svc == service_by_id_.end() || !svc->second.rebalancing || !u.active() || u.movers_chosen ||
        u.spec_version != svc->second.spec_version)
      continue;
    ChooseMovers(id, svc->second, u, &engine);
    // The next pass starts the rollout: due at once, and the status is
    // stored now so that the loop does not call the state settled before.
    QueueStatus(id, u);
    summary.DueAt(now_);
  }
}

ServiceUpdate& Pass::RolloutOf(const std::string& service_id, const StoredService& service) {
  ServiceUpdate& u = state_.updates[service_id];
  if (u.spec_version == service.spec_version && !u.state.empty()) return u;
  // (A status stored for this version, read back at start, goes on as it
  // was: returned above.)
  const std::string stored = u.stored, kept_state = u.state, kept_message = u.message;
  u = ServiceUpdate();
  u.stored = stored;
  u.spec_version = service.spec_version;
  u.state = service.rolling_back ? "rollback_started" : "updating";
  u.message = std::string(KindOf(service)) + " in progress";
  // An automatic rollback keeps saying why it started.
  if (service.rolling_back && kept_state == "rollback_started") u.message = kept_message;
  u.started_at = now_;
  u.next_batch_at = now_;
  return u;
}

// Over every rollout that has something to do (one under way, or with
// replacements in flight): those in flight, its failures, its next batch,
// and its status. A completed or paused one costs a pass nothing.
void Pass::Update() {
  // Every new spec version has a rollout, with nothing to replace as well,
  // so that its status says it is done (a rebalance waits for it).
  for (const std::string& id : DirtyServices())
    if (const auto svc = service_by_id_.find(id);
        svc != service_by_id_.end() && svc->second.spec_version > 1)
      RolloutOf(id, svc->second);
  for (auto it = state_.updates.begin(); it != state_.updates.end();) {
    const auto svc = service_by_id_.find(it->first);
    if (svc == service_by_id_.end()) {
      removed_updates_.push_back(it->first);
      it = state_.updates.erase(it);
      continue;
    }
    ServiceUpdate& u = it->second;
    if ((u.active() || !u.in_flight.empty()) && u.spec_version == svc->second.spec_version) {
      // The full view chooses a rebalance's movers once it has this pass's
      // nodes (ChooseAllMovers); the rollout starts in the next pass. A
      // replacement already in flight (a full visit rebuilt the list) is
      // paired with its mover first, so that scale-down keeps both.
      if (svc->second.rebalancing && u.active() && !u.movers_chosen) {
        PairInFlight(u, u.candidates);
        if (agents_ == nullptr) {
          ++it;
          continue;
        }
        ChooseMovers(it->first, svc->second, u, nullptr);
      }
      RollOut(it->first, svc->second, u);
      QueueStatus(it->first, u);
    }
    ++it;
  }
}

void Pass::RollOut(const std::string& service_id, const StoredService& service, ServiceUpdate& u) {
  const orchestrator::UpdateConfig& config =
      service.rolling_back ? service.rollback : service.update;
  std::erase_if(u.outdated, [&](uint32_t p) {
    const TaskEntry& e = tasks_[p];
    return !e.live() || e.task.service != service_id || e.terminal() ||
           e.task.desired > TaskState::kRunning ||
           e.task.spec_version.value_or(0) >= service.spec_version;
  });
  PairInFlight(u, u.outdated);
  std::string failed_task;
  std::erase_if(u.in_flight, [&](const std::pair<uint32_t, uint32_t>& flight) {
    return Landed(flight, config, service.rebalancing, u, &failed_task);
  });
  if (!failed_task.empty() && u.active() &&
      orchestrator::TooManyFailures(config, u.failures, u.replaced))
    FailureAction(service_id, service, config, u, failed_task);
  if (u.active() && now_ >= u.next_batch_at) StartBatch(service_id, service, config, u);
  if (u.active() && u.outdated.empty() && u.in_flight.empty()) {
    u.state = service.rolling_back ? "rollback_completed" : "completed";
    if (!u.message.starts_with("update rolled back") && !u.message.starts_with("rebalance skipped"))
      u.message = std::string(KindOf(service)) + " completed";
    u.completed_at = now_;
  }
  if (u.active() && !u.outdated.empty() && u.next_batch_at > now_)
    state_.CheckAt(*u.outdated.begin(), u.next_batch_at);
}

// A replacement found in flight by a full visit (Young) whose slot still
// holds an older task of `olds` (outdated, or a rebalance's candidates;
// berthd restarted during a start-first rollout, or the positions moved):
// that task is the one it replaces, so it is not replaced twice.
void Pass::PairInFlight(ServiceUpdate& u, std::set<uint32_t>& olds) {
  std::map<uint64_t, uint32_t> old_by_slot;
  for (auto& [next, old] : u.in_flight) {
    if (old != ServiceUpdate::kNone || tasks_[next].task.slot == 0) continue;
    if (old_by_slot.empty())
      for (uint32_t p : olds) old_by_slot.emplace(tasks_[p].task.slot, p);
    const auto it = old_by_slot.find(tasks_[next].task.slot);
    if (it == old_by_slot.end()) continue;
    old = it->second;
    olds.erase(it->second);
    old_by_slot.erase(it);
  }
}

// A node the rebalance's target still has room on (one place taken), in
// node id order; "" when none: the engine chooses.
std::string Pass::TakeRoom(ServiceUpdate& u) {
  for (auto it = u.room.begin(); it != u.room.end(); it = u.room.erase(it))
    if (it->second > 0) {
      --it->second;
      return it->first;
    }
  return "";
}

// The other task of a start-first pair in flight that `e` belongs to, if
// it is still meant to run.
const TaskEntry* Pass::RunningPartner(const TaskEntry& e) const {
  const auto u = state_.updates.find(e.task.service);
  if (u == state_.updates.end()) return nullptr;
  const uint32_t p = state_.PositionOf(e);
  for (const auto& [next, old] : u->second.in_flight) {
    const uint32_t partner = next == p ? old : old == p ? next : ServiceUpdate::kNone;
    if (partner != ServiceUpdate::kNone && tasks_[partner].live() && tasks_[partner].runnable())
      return &tasks_[partner];
  }
  return nullptr;
}

// Replacements in flight whose old task still runs beside them.
uint64_t Pass::StartFirstPairs(const ServiceUpdate& u) const {
  uint64_t pairs = 0;
  for (const auto& [next, old] : u.in_flight)
    pairs += old != ServiceUpdate::kNone && tasks_[old].live() && tasks_[old].runnable();
  return pairs;
}

// Whether a replacement in flight is done with: it ran for `monitor` (the
// next batch may start `delay` later), or ended first (a failure). A
// start-first replacement that runs stops the task it replaces; a
// rebalance's (`moving`) only once it has run for `monitor`, so a move that
// fails leaves the task where it was.
bool Pass::Landed(const std::pair<uint32_t, uint32_t>& flight,
                  const orchestrator::UpdateConfig& config, bool moving, ServiceUpdate& u,
                  std::string* failed_task) {
  TaskEntry& next = tasks_[flight.first];
  if (!next.live()) return true;
  if (next.terminal()) {
    if (EndedBadly(next.task.state) || next.task.state == TaskState::kComplete) {
      ++u.failures;
      *failed_task = next.task.id;
    }
    return true;
  }
  if (next.task.state != TaskState::kRunning) return false;
  const Timestamp settled = next.task.started_at.value_or(now_) + config.monitor;
  if (flight.second != ServiceUpdate::kNone && (!moving || now_ >= settled)) {
    TaskEntry& old = tasks_[flight.second];
    if (old.live() && !old.terminal() && old.task.desired <= TaskState::kRunning) {
      SetState(old, TaskState::kShutdown,
               "replaced by " + next.task.id + (moving ? " (rebalance)" : " (start-first)"), true);
      ++summary.stopped;
    }
  }
  if (now_ < settled) {
    state_.CheckAt(flight.first, settled);
    return false;
  }
  u.next_batch_at = std::max(u.next_batch_at, now_ + config.delay);
  return true;
}

void Pass::FailureAction(const std::string& service_id, const StoredService& service,
                         const orchestrator::UpdateConfig& config, ServiceUpdate& u,
                         const std::string& failed_task) {
  const std::string cause = "due to failure or early termination of task " + failed_task;
  if (config.failure_action == orchestrator::FailureAction::kContinue) return;
  if (config.failure_action == orchestrator::FailureAction::kRollback && !service.rolling_back &&
      !service.rebalancing) {
    Result<Json> rolled = ServiceRegistry::RolledBack(Json::parse(service.body));
    if (rolled.ok()) {
      store::Write w = store::Write::Put("service", service_id, rolled->dump());
      w.IfRevision(service.revision);
      service_writes_.push_back(std::move(w));
      u.state = "rollback_started";
      u.message = "update rolled back " + cause;
      return;
    }
  }
  u.state = service.rolling_back ? "rollback_paused" : "paused";
  u.message = std::string(KindOf(service)) + " paused " + cause;
}

// Up to `parallelism` (0: all) outdated tasks, lowest slot (or node) first,
// less those still in flight.
void Pass::StartBatch(const std::string& service_id, const StoredService& service,
                      const orchestrator::UpdateConfig& config, ServiceUpdate& u) {
  std::vector<uint32_t> batch(u.outdated.begin(), u.outdated.end());
  std::sort(batch.begin(), batch.end(), [&](uint32_t a, uint32_t b) {
    const StoredTask &x = tasks_[a].task, &y = tasks_[b].task;
    return std::tie(x.slot, x.node) < std::tie(y.slot, y.node);
  });
  const uint64_t room = config.parallelism == 0 ? batch.size()
                        : config.parallelism > u.in_flight.size()
                            ? config.parallelism - u.in_flight.size()
                            : 0;
  if (batch.size() > room) batch.resize(room);
  for (uint32_t p : batch) {
    u.outdated.erase(p);
    // Copies: NewTask may grow the entries.
    const uint64_t slot = tasks_[p].task.slot;
    const std::string node = tasks_[p].task.node, agent = tasks_[p].task.agent;
    const bool start_first =
        config.order == orchestrator::UpdateOrder::kStartFirst || service.rebalancing;
    // Its slot may hold a task of this version already (berthd restarted
    // during a start-first update): that one is its replacement.
    if (const std::optional<uint32_t> holder = CurrentHolder(service_id, service, slot)) {
      u.in_flight.emplace_back(*holder, p);
      continue;
    }
    if (!start_first) {
      SetState(tasks_[p], TaskState::kShutdown,
               "replaced by spec version " + std::to_string(service.spec_version), true);
      ++summary.stopped;
    }
    // A rebalance sends the replacement where its target has room: one pass
    // placing a batch beside the movers would not split it that way.
    TaskEntry& next = NewTask(service_id, service.spec_version, slot,
                              slot == 0             ? node
                              : service.rebalancing ? TakeRoom(u)
                                                    : std::string());
    if (slot == 0 && agents_ != nullptr) next.task.agent = agent;
    u.in_flight.emplace_back(state_.PositionOf(next), start_first ? p : ServiceUpdate::kNone);
    ++u.replaced;
  }
}

std::optional<uint32_t> Pass::CurrentHolder(const std::string& service_id,
                                            const StoredService& service, uint64_t slot) const {
  const orchestrator::ServiceTally* tally = state_.TallyOf(service_id);
  if (slot == 0 || slot >= tally->holder.size() ||
      tally->holder[slot] == orchestrator::ServiceTally::kNoHolder)
    return std::nullopt;
  const TaskEntry& e = tasks_[tally->holder[slot]];
  if (!e.live() || !e.runnable() || e.task.spec_version.value_or(0) != service.spec_version)
    return std::nullopt;
  return tally->holder[slot];
}

uint64_t Pass::Outgoing(const std::string& service_id) const {
  const auto u = state_.updates.find(service_id);
  return u == state_.updates.end() ? 0 : StartFirstPairs(u->second);
}

// The status to store when it changed (docs/api.md, "update_status").
void Pass::QueueStatus(const std::string& service_id, ServiceUpdate& u) {
  Json status = {{"spec_version", u.spec_version}, {"state", u.state},
                 {"message", u.message},           {"replaced", u.replaced},
                 {"failures", u.failures},         {"in_flight", StartFirstPairs(u)}};
  if (u.started_at) status["started_at"] = FormatRfc3339(*u.started_at);
  if (u.completed_at) status["completed_at"] = FormatRfc3339(*u.completed_at);
  std::string text = status.dump();
  if (text == u.stored) return;
  u.stored = text;
  status_writes_.push_back(store::Write::Put("update", service_id, std::move(text)));
}

}  // namespace berth::daemon
