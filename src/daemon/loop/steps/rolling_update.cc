#include "daemon/loop/steps/rolling_update.h"

#include <algorithm>
#include <tuple>

#include "daemon/registry/service_registry.h"

namespace berth::daemon {

using api::Json;

namespace {

bool EndedBadly(TaskState state) {
  return state == TaskState::kFailed || state == TaskState::kRejected;
}

}  // namespace

const char* RolloutKind(const StoredService& service) {
  return service.rolling_back ? "rollback" : service.rebalancing ? "rebalance" : "update";
}

void RollingUpdate::Outdated(TaskEntry& e, const std::string& service_id,
                             const StoredService& service) {
  if (e.task.state < TaskState::kAssigned) {
    pass_.SetState(e, TaskState::kShutdown,
                   "replaced by spec version " + std::to_string(service.spec_version), true);
    ++pass_.summary.stopped;
    return;
  }
  RolloutOf(service_id, service).outdated.insert(pass_.PositionOf(e));
}

void RollingUpdate::Young(TaskEntry& e, const std::string& service_id,
                          const StoredService& service) {
  ServiceUpdate* rollout = rollouts_.Find(service_id);
  if (rollout == nullptr || !rollout->active() || rollout->spec_version != service.spec_version)
    return;
  ServiceUpdate& u = *rollout;
  if (e.terminal() || e.task.spec_version.value_or(0) != service.spec_version) return;
  const uint32_t p = pass_.PositionOf(e);
  const orchestrator::UpdateConfig& config =
      service.rolling_back ? service.rollback : service.update;
  if (e.task.state == TaskState::kRunning && e.task.started_at &&
      *e.task.started_at + config.monitor <= pass_.now())
    return;
  for (const auto& [next, old] : u.in_flight)
    if (next == p) return;
  u.in_flight.emplace_back(p, ServiceUpdate::kNone);
}

ServiceUpdate& RollingUpdate::RolloutOf(const std::string& service_id,
                                        const StoredService& service) {
  ServiceUpdate& u = rollouts_.Of(service_id);
  if (u.spec_version == service.spec_version && !u.state.empty()) return u;
  // (A status stored for this version, read back at start, goes on as it
  // was: returned above.)
  const std::string stored = u.stored, kept_state = u.state, kept_message = u.message;
  u = ServiceUpdate();
  u.stored = stored;
  u.spec_version = service.spec_version;
  u.state = service.rolling_back ? "rollback_started" : "updating";
  u.message = std::string(RolloutKind(service)) + " in progress";
  // An automatic rollback keeps saying why it started.
  if (service.rolling_back && kept_state == "rollback_started") u.message = kept_message;
  u.started_at = pass_.now();
  u.next_batch_at = pass_.now();
  return u;
}

void RollingUpdate::Open() {
  for (const std::string& id : pass_.DirtyServices())
    if (const auto svc = pass_.FindService(id);
        svc != pass_.services().end() && svc->second.spec_version > 1)
      RolloutOf(id, svc->second);
}

void RollingUpdate::Advance() {
  for (auto it = rollouts_.begin(); it != rollouts_.end();) {
    const auto svc = pass_.FindService(it->first);
    if (svc == pass_.services().end()) {
      pass_.DeleteRolloutStatus(it->first);
      it = rollouts_.erase(it);
      continue;
    }
    ServiceUpdate& u = it->second;
    // A rebalance whose movers the full view has not chosen yet
    // (Rebalance::BeforeRollouts) starts in the next pass.
    const bool held = svc->second.rebalancing && u.active() && !u.movers_chosen;
    if (!held && (u.active() || !u.in_flight.empty()) &&
        u.spec_version == svc->second.spec_version) {
      RollOut(it->first, svc->second, u);
      QueueStatus(it->first, u);
    }
    ++it;
  }
}

void RollingUpdate::RollOut(const std::string& service_id, const StoredService& service,
                            ServiceUpdate& u) {
  const orchestrator::UpdateConfig& config =
      service.rolling_back ? service.rollback : service.update;
  std::erase_if(u.outdated, [&](uint32_t p) {
    const TaskEntry& e = pass_.task(p);
    return !e.live() || e.task.service != service_id || e.terminal() ||
           e.task.desired > TaskState::kRunning ||
           e.task.spec_version.value_or(0) >= service.spec_version;
  });
  u.PairInFlight(u.outdated, pass_.tasks());
  std::string failed_task;
  std::erase_if(u.in_flight, [&](const std::pair<uint32_t, uint32_t>& flight) {
    return Landed(flight, config, service.rebalancing, u, &failed_task);
  });
  if (!failed_task.empty() && u.active() &&
      orchestrator::TooManyFailures(config, u.failures, u.replaced)) {
    FailureAction(service_id, service, config, u, failed_task);
    // Rolled back: the next spec version takes over; this one neither
    // starts another batch nor completes.
    if (u.state == "rollback_started" && !service.rolling_back) return;
  }
  if (u.active() && pass_.now() >= u.next_batch_at) StartBatch(service_id, service, config, u);
  if (u.active() && u.outdated.empty() && u.in_flight.empty()) {
    u.state = service.rolling_back ? "rollback_completed" : "completed";
    if (!u.message.starts_with("update rolled back") && !u.message.starts_with("rebalance skipped"))
      u.message = std::string(RolloutKind(service)) + " completed";
    u.completed_at = pass_.now();
  }
  if (u.active() && !u.outdated.empty() && u.next_batch_at > pass_.now())
    pass_.CheckAt(*u.outdated.begin(), u.next_batch_at);
}

// Whether a replacement in flight is done with: it ran for `monitor` (the
// next batch may start `delay` later), or ended first (a failure). A
// start-first replacement that runs stops the task it replaces; a
// rebalance's (`moving`) only once it has run for `monitor`, so a move that
// fails leaves the task where it was.
bool RollingUpdate::Landed(const std::pair<uint32_t, uint32_t>& flight,
                           const orchestrator::UpdateConfig& config, bool moving, ServiceUpdate& u,
                           std::string* failed_task) {
  TaskEntry& next = pass_.task(flight.first);
  if (!next.live()) return true;
  if (next.terminal()) {
    if (EndedBadly(next.task.state) || next.task.state == TaskState::kComplete) {
      ++u.failures;
      *failed_task = next.task.id;
    }
    return true;
  }
  if (next.task.state != TaskState::kRunning) return false;
  const Timestamp settled = next.task.started_at.value_or(pass_.now()) + config.monitor;
  if (flight.second != ServiceUpdate::kNone && (!moving || pass_.now() >= settled)) {
    TaskEntry& old = pass_.task(flight.second);
    if (old.live() && !old.terminal() && old.task.desired <= TaskState::kRunning) {
      pass_.SetState(old, TaskState::kShutdown,
                     "replaced by " + next.task.id + (moving ? " (rebalance)" : " (start-first)"),
                     true);
      ++pass_.summary.stopped;
    }
  }
  if (pass_.now() < settled) {
    pass_.CheckAt(flight.first, settled);
    return false;
  }
  u.next_batch_at = std::max(u.next_batch_at, pass_.now() + config.delay);
  return true;
}

void RollingUpdate::FailureAction(const std::string& service_id, const StoredService& service,
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
      pass_.WriteService(std::move(w));
      u.state = "rollback_started";
      u.message = "update rolled back " + cause;
      return;
    }
  }
  u.state = service.rolling_back ? "rollback_paused" : "paused";
  u.message = std::string(RolloutKind(service)) + " paused " + cause;
}

// Up to `parallelism` (0: all) outdated tasks, lowest slot (or node) first,
// less those still in flight.
void RollingUpdate::StartBatch(const std::string& service_id, const StoredService& service,
                               const orchestrator::UpdateConfig& config, ServiceUpdate& u) {
  std::vector<uint32_t> batch(u.outdated.begin(), u.outdated.end());
  std::sort(batch.begin(), batch.end(), [&](uint32_t a, uint32_t b) {
    const StoredTask &x = pass_.task(a).task, &y = pass_.task(b).task;
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
    const uint64_t slot = pass_.task(p).task.slot;
    const std::string node = pass_.task(p).task.node, agent = pass_.task(p).task.agent;
    const bool start_first =
        config.order == orchestrator::UpdateOrder::kStartFirst || service.rebalancing;
    // Its slot may hold a task of this version already (berthd restarted
    // during a start-first update): that one is its replacement.
    if (const std::optional<uint32_t> holder = CurrentHolder(service_id, service, slot)) {
      u.in_flight.emplace_back(*holder, p);
      continue;
    }
    if (!start_first) {
      pass_.SetState(pass_.task(p), TaskState::kShutdown,
                     "replaced by spec version " + std::to_string(service.spec_version), true);
      ++pass_.summary.stopped;
    }
    // A rebalance sends the replacement where its target has room: one pass
    // placing a batch beside the movers would not split it that way.
    TaskEntry& next = pass_.NewTask(service_id, service.spec_version, slot,
                                    slot == 0             ? node
                                    : service.rebalancing ? u.TakeRoom()
                                                          : std::string());
    if (slot == 0 && pass_.on_agents()) next.task.agent = agent;
    u.in_flight.emplace_back(pass_.PositionOf(next), start_first ? p : ServiceUpdate::kNone);
    ++u.replaced;
  }
}

std::optional<uint32_t> RollingUpdate::CurrentHolder(const std::string& service_id,
                                                     const StoredService& service, uint64_t slot) {
  const orchestrator::ServiceTally* tally = &pass_.TallyOf(service_id);
  if (slot == 0 || slot >= tally->holder.size() ||
      tally->holder[slot] == orchestrator::ServiceTally::kNoHolder)
    return std::nullopt;
  const TaskEntry& e = pass_.task(tally->holder[slot]);
  if (!e.live() || !e.runnable() || e.task.spec_version.value_or(0) != service.spec_version)
    return std::nullopt;
  return tally->holder[slot];
}

// The status to store when it changed (docs/api.md, "update_status").
void RollingUpdate::QueueStatus(const std::string& service_id, ServiceUpdate& u) {
  Json status = {{"spec_version", u.spec_version}, {"state", u.state},
                 {"message", u.message},           {"replaced", u.replaced},
                 {"failures", u.failures},         {"in_flight", u.StartFirstPairs(pass_.tasks())}};
  if (u.started_at) status["started_at"] = FormatRfc3339(*u.started_at);
  if (u.completed_at) status["completed_at"] = FormatRfc3339(*u.completed_at);
  std::string text = status.dump();
  if (text == u.stored) return;
  u.stored = text;
  pass_.WriteRolloutStatus(store::Write::Put("update", service_id, std::move(text)));
}

}  // namespace berth::daemon
