#include "daemon/loop/pass.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <thread>

#include "api/cluster_codec.h"
#include "api/json_fields.h"
#include "core/id_order.h"
#include "daemon/registry/service_registry.h"
#include "fairshare/task_choice.h"
#include "orchestrator/orchestrator.h"
#include "placement/scheduler.h"

namespace berth::daemon {
namespace {

// Writes() encodes on two threads from this many bodies: below it, starting
// a thread costs more than it saves (100,000 bodies: 45 ms on one thread,
// 24-30 on two, on the machine of docs/benchmarks.md).
constexpr size_t kParallelEncodeFrom = 20'000;

}  // namespace

using api::Json;

void Pass::SetState(TaskEntry& e, TaskState state, std::string message, bool stop) {
  const bool was_bound = e.bound_on_agent();
  const bool was_started = e.task.state >= TaskState::kAssigned && !e.terminal();
  const std::string stopped_on = e.task.node;
  e.task.state = state;
  e.task.updated_at = now_;
  e.task.message = std::move(message);
  if (stop) e.task.desired = TaskState::kShutdown;
  MarkChanged(e);
  // A task that left its node gives the agent's binding back. One that ended
  // keeps "agent" (where it ran: its node is the agent's, not gone); one
  // waiting again is neither bound nor pinned any more.
  if (was_bound && !e.bound_on_agent()) ReleaseAfterCommit(e.task.agent, e.task.id);
  if (e.task.state == TaskState::kNew) e.task.agent.clear();
  // A task the loop takes off its node (not one that ended by itself) is
  // stopped by its executor.
  if (was_started && !exiting_ && (e.terminal() || e.task.state == TaskState::kNew)) {
    const ServiceIt svc =
        e.task.service.empty() ? service_by_id_.end() : service_by_id_.find(e.task.service);
    executor_.Stop({e.task.id, stopped_on, RunOf(e, svc), e.task.started_at, ProcessOf(e, svc)});
  }
}

void Pass::MarkChanged(TaskEntry& e) {
  e.changed = true;
  Touch(e);
  state_.Recount(e);
}

void Pass::SetInPlan(TaskEntry& e, bool in_plan) {
  if (e.in_plan == in_plan) return;
  e.in_plan = in_plan;
  Touch(e);
  state_.Recount(e);
}

void Pass::Touch(TaskEntry& e) {
  if (std::exchange(e.touched, true)) return;
  touched_.push_back(state_.PositionOf(e));
}

const std::set<std::string>& Pass::DirtyServices() {
  dirty_services_.merge(state_.TakeDirtyServices());
  return dirty_services_;
}

void Pass::ReleaseAfterCommit(const std::string& agent_id, const std::string& task_id) {
  releases_[agent_id].push_back(task_id);
  releasing_.insert(task_id);
}

// The executor's part (assigned tasks start, running ones may have ended),
// and the tasks whose service or node is gone, whose service has moved on
// to a newer spec version, or whose node may no longer run them.
void Pass::StartAndStop() {
  for (uint32_t position : visit_) {
    TaskEntry& e = tasks_[position];
    if (!e.live()) continue;
    // A node an agent bound the task to is the agent's, not berthd's.
    const std::string& node = e.task.node;
    const bool on_agent = agents_ != nullptr && !e.task.agent.empty();
    const bool node_gone = !node.empty() && !on_agent && !state_.HasNode(node);
    if (!e.task.job.empty()) {
      const auto job = job_by_id_.find(e.task.job);
      RunJobTask(e, job == job_by_id_.end() || job->second.killed, node_gone);
      continue;
    }
    const std::string& service = e.task.service;
    auto svc = service.empty() ? service_by_id_.end() : service_by_id_.find(service);
    // A task of an earlier service of the same name (removed, then created
    // again) is not the new one's.
    if (svc != service_by_id_.end() && orchestrator::SerialOf(e.task.id) < svc->second.incarnation)
      svc = service_by_id_.end();
    const bool service_gone = !service.empty() && svc == service_by_id_.end();
    SetInPlan(e, !service_gone && !node_gone);
    if (summary.visited_all && svc != service_by_id_.end()) Young(e, svc->first, svc->second);
    if (e.terminal()) {
      // A removed service's tasks go with it, as Docker's do.
      if (service_gone && !e.pruned) Prune(e);
      if (!service_gone) RestartOrKeep(e, svc->second);
      continue;
    }
    // A rebalance's candidates run the current template: they go on as any
    // task does below until one is chosen to move.
    if (!service_gone && svc->second.rebalancing &&
        e.task.spec_version.value_or(0) < svc->second.spec_version)
      RebalanceCandidate(e, svc->first, svc->second);
    if (service_gone) {
      SetState(e, TaskState::kShutdown, "service '" + service + "' was removed", true);
      ++summary.stopped;
    } else if (node_gone) {
      SetState(e, TaskState::kOrphaned, "node '" + node + "' was removed");
      ++summary.stopped;
    } else if (svc != service_by_id_.end() &&
               e.task.spec_version.value_or(0) < svc->second.template_version) {
      Outdated(e, svc->first, svc->second);
    } else if (!on_agent && !node.empty() && LeaveNode(e, svc->second)) {
      ++summary.stopped;
    } else if (e.task.state == TaskState::kNew && e.task.restart_at) {
      if (now_ < *e.task.restart_at) {
        state_.CheckAt(position, *e.task.restart_at);
        continue;
      }
      e.task.restart_at.reset();
      SetState(e, TaskState::kPending, "");
    } else if (e.task.state == TaskState::kAssigned) {
      Start(e, svc);
    } else if (e.task.state == TaskState::kRunning && svc != service_by_id_.end()) {
      if (Finish(e, svc) >= 0) RestartOrKeep(e, svc->second);
    }
  }
}

// As SwarmKit's restart supervisor: the ended task's desired state becomes
// shutdown and a new task takes its slot (or node), placed once the delay
// has passed; or, when the policy says no, the ended task keeps its slot
// (desired complete) with the reason.
void Pass::RestartOrKeep(TaskEntry& e, const StoredService& service) {
  const TaskState ended = e.task.state;
  if (e.task.desired != TaskState::kRunning ||
      (ended != TaskState::kComplete && ended != TaskState::kFailed &&
       ended != TaskState::kRejected) ||
      e.task.spec_version.value_or(0) < service.template_version)
    return;
  // Half of a start-first pair whose other half runs on: the slot is held.
  if (const TaskEntry* partner = RunningPartner(e)) {
    e.task.desired = TaskState::kShutdown;
    e.task.message += "; not restarted: its slot runs " + partner->task.id;
    MarkChanged(e);
    return;
  }
  std::deque<Timestamp>& attempts = state_.RestartsOf(state_.HistoryGroupOf(e));
  const orchestrator::RestartDecision decision =
      orchestrator::DecideRestart(service.restart, ended, now_, attempts);
  if (!decision.restart) {
    e.task.desired = TaskState::kComplete;
    e.task.message += (e.task.message.empty() ? "" : "; ") + decision.reason;
    MarkChanged(e);
    return;
  }
  attempts.push_back(now_);
  e.task.desired = TaskState::kShutdown;
  MarkChanged(e);
  // Copies: NewTask may grow the entries, and `e` with them.
  const std::string old_id = e.task.id, service_id = e.task.service, node = e.task.node,
                    agent = e.task.agent;
  const uint64_t slot = e.task.slot;
  TaskEntry* next = slot != 0 ? &NewTask(service_id, service.spec_version, slot, "")
                              : CoverNode(service_id, service.spec_version, node);
  if (next == nullptr) return;  // its node no longer takes the service's tasks
  if (slot == 0 && agents_ != nullptr) next->task.agent = agent;
  next->task.message = "restarting " + old_id + " (" + std::string(ToString(ended)) + ")";
  if (decision.at <= now_) return;
  next->task.state = TaskState::kNew;
  next->task.restart_at = decision.at;
  next->task.message += " after the restart delay, at " + FormatRfc3339(decision.at);
  state_.Recount(*next);
  state_.CheckAt(state_.PositionOf(*next), decision.at);
}

// SwarmKit's rules (its orchestrators' restartTasksByNodeID and its
// constraint enforcer): a drained node's tasks are stopped and replaced; a
// node down or unknown past its grace has its tasks replaced (Abandon); a
// running task whose node no longer satisfies its service's constraints is
// stopped and replaced. A task abandoned earlier is stopped once its node
// is ready again, so the node does not run it next to its replacement.
bool Pass::LeaveNode(TaskEntry& e, const StoredService& service) {
  const StoredNode& stored = nodes_.find(e.task.node)->second;
  const Node& node = stored.node;
  const std::string& id = e.task.node;
  if (e.task.desired > TaskState::kRunning) {  // abandoned while its node was down
    if (node.state != NodeState::kReady) return false;
    SetState(e, TaskState::kShutdown,
             "stopped: node '" + id + "' is back and the task was replaced meanwhile", true);
    return true;
  }
  if (node.availability == NodeAvailability::kDrain) {
    SetState(e, TaskState::kShutdown, "node '" + id + "' was drained", true);
    return true;
  }
  if (node.state != NodeState::kReady) {
    const Duration grace =
        node.state == NodeState::kDown ? lifecycle_.down_grace : lifecycle_.unknown_grace;
    const Timestamp since = state_.NotReadySince(id, now_);
    if (now_ < since + grace) {
      state_.CheckAt(state_.PositionOf(e), since + grace);
      return false;
    }
    Abandon(e, "node '" + id + "' is " + std::string(ToString(node.state)) + " since " +
                   FormatRfc3339(since) + "; replaced elsewhere");
    return true;
  }
  if (e.task.state < TaskState::kAssigned) return false;  // the engine explains a pending one
  for (size_t i = 0; i < service.constraints.size(); ++i)
    if (!constraint::Matches(service.constraints[i], node)) {
      SetState(
          e, TaskState::kShutdown,
          "node '" + id + "' no longer satisfies constraint '" + service.spec->constraints[i] + "'",
          true);
      return true;
    }
  return false;
}

void Pass::Abandon(TaskEntry& e, std::string message) {
  e.task.desired = TaskState::kShutdown;
  e.task.message = std::move(message);
  e.task.updated_at = now_;
  MarkChanged(e);
}

// An executor that starts the task elsewhere (a berth-node) leaves it
// assigned until the node says it runs.
void Pass::Start(TaskEntry& e, ServiceIt svc) {
  executor::TaskToRun task = ToRun(e, svc);
  task.started_at.reset();
  std::optional<std::string> message = executor_.Start(task, now_);
  if (!message) return;
  SetState(e, TaskState::kRunning, std::move(*message));
  e.task.started_at = now_;
  ++summary.started;
}

// Asks the executor whether a running task ended (complete or failed; `run`
// is how the simulated executor runs it). Returns the time it ran, or -1
// while it runs on (the executor's timer then becomes the pass's). A failed
// service task is a failure on its node for the placement engine's
// faulty-node rule (through its state and updated_at).
int64_t Pass::Finish(TaskEntry& e, ServiceIt svc) {
  std::optional<Timestamp> due;
  std::optional<executor::Ended> ended = executor_.Check(ToRun(e, svc), now_, &due);
  if (!ended) {
    if (due) state_.CheckAt(state_.PositionOf(e), *due);
    return -1;
  }
  exiting_ = true;
  const TaskState state = ended->rejected ? TaskState::kRejected
                          : ended->failed ? TaskState::kFailed
                                          : TaskState::kComplete;
  SetState(e, state, std::move(ended->message));
  exiting_ = false;
  return ended->ran_ms;
}

// A task of a batch job: stopped when its job is killed, back to waiting
// when its node is gone, and run by the executor: assigned ->
// running -> complete or failed once its duration has passed since it
// started, recording the duration under the task's name.
void Pass::RunJobTask(TaskEntry& e, bool killed, bool node_gone) {
  const TaskState state = e.task.state;
  SetInPlan(e, state != TaskState::kNew && !node_gone);
  if (e.terminal()) return;
  if (killed) {
    SetState(e, TaskState::kShutdown, "job was killed", true);
    SetInPlan(e, false);
    ++summary.stopped;
  } else if (node_gone) {
    Requeue(e, "node '" + e.task.node + "' was removed; waiting again");
  } else if (state == TaskState::kAssigned) {
    Start(e, service_by_id_.end());
  } else if (state == TaskState::kRunning) {
    const int64_t ms = Finish(e, service_by_id_.end());
    if (ms < 0) return;
    Recorded& recorded = durations_[NameOf(e)];
    ++recorded.count;
    recorded.total_ms += ms;
    if (!std::exchange(recorded.changed, true)) recorded_.push_back(NameOf(e));
  }
}

void Pass::Requeue(TaskEntry& e, std::string message) {
  SetState(e, TaskState::kNew, std::move(message));
  e.task.node.clear();
  e.task.admitted_at.reset();
  e.task.assigned_at.reset();
  e.task.started_at.reset();
  SetInPlan(e, false);
  state_.Recount(e);  // without its node
}

// How the simulated executor runs `e`: a job's task by its own run (one
// stored without ends at once: a job's task always has one), a service's
// task by its service's (`svc`, looked up by the caller; none if it is gone).
executor::TaskToRun Pass::ToRun(const TaskEntry& e, ServiceIt svc) const {
  return {e.task.id, e.task.node, RunOf(e, svc), e.task.started_at, ProcessOf(e, svc)};
}

const std::optional<SimulatedRun>& Pass::RunOf(const TaskEntry& e, ServiceIt svc) const {
  static const std::optional<SimulatedRun> kNone, kEndsAtOnce = SimulatedRun{};
  if (!e.task.job.empty()) return e.task.run ? e.task.run : kEndsAtOnce;
  if (svc == service_by_id_.end()) return kNone;
  // A task of an older template runs as that version did (previous_spec).
  if (svc->second.RunsPrevious(e.task.spec_version)) return svc->second.previous_run;
  return svc->second.run;
}

// How a berth-node runs `e`: its version's template's process (a job's
// tasks have none).
const executor::ProcessSpec* Pass::ProcessOf(const TaskEntry& e, ServiceIt svc) const {
  if (svc == service_by_id_.end()) return nullptr;
  if (svc->second.RunsPrevious(e.task.spec_version)) return svc->second.previous_process.get();
  return svc->second.process.get();
}

// A job's task records its durations under its name, by default its id.
const std::string& Pass::NameOf(const TaskEntry& e) {
  return e.task.name.empty() ? e.task.id : e.task.name;
}

// W: every ready, active node offers its "slots" workers (default 1); with
// agents, every node of every agent offers one.
int64_t Pass::Workers() { return agents_ != nullptr ? agents_->Workers() : state_.Workers(); }

std::optional<Duration> Pass::ExpectedDuration(const std::string& name) const {
  auto it = durations_.find(name);
  if (it == durations_.end() || it->second.count == 0) return std::nullopt;
  return std::chrono::milliseconds(it->second.total_ms / it->second.count);
}

// One fair-share iteration (spec/fairshare.md) over the jobs that are not
// killed: admitted tasks become pending (the placement engine places them),
// tasks stopped by rebalancing go back to waiting. An admitted task counts as
// running from admission on, so a task the engine cannot place yet keeps its
// worker instead of letting admission start more.
void Pass::Admit(fairshare::Admission& admission) {
  // Jobs in arrival order: by the revision of their last write (a killed
  // job moves, but it is skipped).
  std::vector<std::pair<int64_t, const std::string*>> arrival;
  for (const auto& [id, stored] : job_by_id_)
    if (!stored.killed) arrival.emplace_back(stored.revision, &id);
  std::sort(arrival.begin(), arrival.end());
  std::vector<fairshare::Job> jobs;
  std::vector<std::vector<TaskEntry*>> running, waiting;
  for (const auto& [revision, id] : arrival) {
    const StoredJob& job = job_by_id_.at(*id);
    fairshare::Job j{*id, job.requestor, {}, {}};
    std::vector<TaskEntry*> r, w;
    for (int64_t i = 1; i <= job.tasks; ++i) {
      auto it = task_index_.find(*id + "." + std::to_string(i));
      if (it == task_index_.end()) continue;
      TaskEntry& e = tasks_[it->second];
      if (e.task.state == TaskState::kNew) {
        w.push_back(&e);
      } else if (!e.terminal()) {
        r.push_back(&e);
        j.running.push_back({e.task.id, e.task.admitted_at.value_or(now_)});
      }
    }
    // Waiting tasks in choice order: longest expected duration first.
    std::stable_sort(w.begin(), w.end(), [&](const TaskEntry* a, const TaskEntry* b) {
      const auto da = ExpectedDuration(NameOf(*a)), db = ExpectedDuration(NameOf(*b));
      return da.has_value() && (!db.has_value() || *da > *db);
    });
    for (TaskEntry* e : w) j.waiting.push_back({e->task.id, ExpectedDuration(NameOf(*e))});
    jobs.push_back(std::move(j));
    running.push_back(std::move(r));
    waiting.push_back(std::move(w));
  }
  const fairshare::IterationResult result = admission.Iterate(Workers(), jobs, now_);
  if (!jobs.empty()) ExplainAdmission(admission.config(), result);
  for (const fairshare::TaskRef& ref : result.start_tasks) {
    TaskEntry& e = *waiting[ref.job][ref.task];
    SetInPlan(e, true);
    SetState(e, TaskState::kPending, "admitted for requestor '" + jobs[ref.job].requestor + "'");
    e.task.admitted_at = now_;
    ++summary.admitted;
  }
  for (const fairshare::TaskRef& ref : result.stop_tasks) {
    Requeue(*running[ref.job][ref.task], "stopped by rebalancing; waiting again");
    ++summary.stopped;
  }
}

// What `task why` tells of a job's waiting task (task_views.h): per class,
// its entitlement, running and waiting tasks, and the idle workers; stored
// as one object (kind "admission", id "status") when it changes.
void Pass::ExplainAdmission(const fairshare::Config& config,
                            const fairshare::IterationResult& result) {
  Json classes = Json::object();
  for (size_t c = 0; c < result.target.size(); ++c) {
    const auto index = static_cast<fairshare::ClassIndex>(c);
    classes[config.ClassName(index)] = {{"percent", config.Percent(index)},
                                        {"entitlement", result.target[c]},
                                        {"running", result.running[c]},
                                        {"waiting", result.waiting[c]},
                                        {"starting", result.start[c] - result.stop[c]}};
  }
  std::string status =
      Json{{"workers", Workers()}, {"idle", result.idle}, {"classes", classes}}.dump();
  if (status != state_.admission_status) admission_status_ = std::move(status);
}

// Replicated services with more runnable tasks than replicas stop the extra
// ones: pending tasks first, then the highest replica numbers (from the
// service's tally; by a visit of its tasks when the tally cannot tell).
void Pass::ScaleDown() {
  for (const std::string& id : DirtyServices()) {
    const auto svc = service_by_id_.find(id);
    if (svc == service_by_id_.end() || !svc->second.replicas) continue;
    const uint64_t replicas = *svc->second.replicas;
    const orchestrator::ServiceTally& tally = *state_.TallyOf(id);
    // Tasks a start-first update replaces share their slot with the new one.
    const uint64_t keep = replicas + Outgoing(id);
    if (tally.runnable_count <= keep) continue;
    std::vector<TaskEntry*> stop;
    if (std::optional<std::vector<uint64_t>> numbers = orchestrator::ChooseScaleDown(tally, keep)) {
      for (uint64_t n : *numbers) stop.push_back(&tasks_[tally.holder[n]]);
    } else {
      std::vector<TaskEntry*> entries = RunnableTasksOf(id);
      std::vector<orchestrator::ScaleDownCandidate> candidates;
      for (const TaskEntry* e : entries)
        candidates.push_back({e->task.id, e->task.state == TaskState::kPending});
      for (size_t i : orchestrator::ChooseScaleDown(candidates, keep)) stop.push_back(entries[i]);
    }
    for (TaskEntry* e : stop) {
      SetState(*e, TaskState::kShutdown, "scaled down to " + std::to_string(replicas) + " replicas",
               true);
      ++summary.stopped;
    }
  }
}

std::vector<TaskEntry*> Pass::RunnableTasksOf(const std::string& service) {
  std::vector<TaskEntry*> entries;
  for (TaskEntry& e : tasks_)
    if (e.task.service == service && e.planned() && e.runnable()) entries.push_back(&e);
  return entries;
}

// Missing replicas of replicated services become pending tasks, by the
// orchestrator's rule (as `berth plan`'s decoder makes them), answered from
// their tallies; services by id, so tasks are made in a fixed order.
void Pass::GenerateReplicas() {
  for (const std::string& id : DirtyServices()) {
    const auto svc = service_by_id_.find(id);
    if (svc == service_by_id_.end() || !svc->second.replicas) continue;
    const std::vector<uint64_t> slots =
        orchestrator::NewSlots(*state_.TallyOf(id), *svc->second.replicas);
    // Grow to powers of two: a reserve of exactly what one service needs
    // would move every entry for the next small service. The index grows
    // with the entries, so that a large service does not rehash it a dozen
    // times.
    if (const size_t needed = tasks_.size() + slots.size(); tasks_.capacity() < needed) {
      tasks_.reserve(std::bit_ceil(needed));
      task_index_.reserve(tasks_.capacity());
    }
    for (uint64_t slot : slots) NewTask(id, svc->second.spec_version, slot, "");
  }
}

// Its id is new for the life of the store (orchestrator::TaskId).
TaskEntry& Pass::NewTask(const std::string& service, uint64_t spec_version, uint64_t slot,
                         const std::string& node) {
  std::string id =
      orchestrator::TaskId(service, slot != 0 ? std::to_string(slot) : node, state_.revision);
  ++summary.created;
  auto [it, added] = task_index_.try_emplace(std::move(id), 0);
  if (added) it->second = state_.NewEntry(it->first);
  TaskEntry& e = tasks_[it->second];
  state_.Retire(e);  // nothing, unless the store was written behind berthd's back
  e.task = StoredTask();
  e.task.id = it->first;
  e.task.state = TaskState::kPending;
  e.task.service = service;
  e.task.spec_version = spec_version;
  e.task.slot = slot;
  e.task.node = node;
  e.in_plan = true;
  MarkChanged(e);
  return e;
}

// The full-view engine (FullView) on the tasks the pass hands it: missing
// replicas and global tasks are created as `berth plan`'s decoder creates
// them (docs/plan.md), pending tasks are assigned or keep the engine's
// explanation as their message.
Status Pass::Place(FullView& engine) {
  GenerateReplicas();
  GenerateGlobalTasksOnNodes();
  std::vector<uint32_t> sync = visit_;
  sync.insert(sync.end(), touched_.begin(), touched_.end());
  BERTH_RETURN_IF_ERROR(engine.Sync(
      state_, changed_nodes_, sync, [](const TaskEntry& e) { return e.planned(); },
      [this](const TaskEntry& e) { return SpecOf(e); },
      [this](const TaskEntry& e) {
        const auto it = service_by_id_.find(e.task.service);
        return it != service_by_id_.end() && !it->second.replicas.has_value();
      }));
  const placement::PassResult result = engine.Schedule(now_);
  ChooseAllMovers(engine);
  RebalanceOnJoin(engine);
  summary.pending += static_cast<int>(result.unchanged);
  for (const placement::Decision& d : result.decisions) {
    const size_t position = engine.EntryOf(d.task);
    TaskEntry& e = tasks_[position];
    if (d.node != placement::kNoNode) {
      e.task.node = engine.NodeId(d.node);
      SetState(e, TaskState::kAssigned, result.MessageOf(d));
      assigned_.push_back(position);
      continue;
    }
    ++summary.pending;
    const std::string& reason = result.MessageOf(d);
    if (e.task.message == reason) continue;
    e.task.message = reason;
    if (!e.task.updated_at) e.task.updated_at = now_;
    MarkChanged(e);
  }
  return Status::Ok();
}

// After a node joined: each replicated service with "rebalance": "on-join"
// whose last rollout is done is rebalanced (a new spec version, as
// ServiceRegistry::Rebalance makes) if the engine would now place some of
// its tasks elsewhere (FullView::RebalanceMoves, over the nodes this pass synced).
// A service whose rollout has not started, is under way or is paused
// (ServiceRegistry::WhyRebalanceWaits) is asked again in the next passes.
void Pass::RebalanceOnJoin(const FullView& engine) {
  if (state_.TakeNodesJoined())
    for (const auto& [id, service] : service_by_id_)
      if (service.rebalance_on_join && service.replicas) state_.rebalance_due.insert(id);
  for (auto it = state_.rebalance_due.begin(); it != state_.rebalance_due.end();) {
    const auto svc = service_by_id_.find(*it);
    if (svc == service_by_id_.end() || !svc->second.rebalance_on_join || !svc->second.replicas ||
        !svc->second.spec) {
      it = state_.rebalance_due.erase(it);
      continue;
    }
    const StoredService& service = svc->second;
    ServiceRegistry::LastRollout last;
    if (const auto u = state_.updates.find(*it); u != state_.updates.end())
      last = {u->second.spec_version, u->second.state, u->second.message,
              StartFirstPairs(u->second)};
    if (!ServiceRegistry::WhyRebalanceWaits(*it, service.spec_version, service.rebalancing, last)
             .empty()) {
      ++it;
      continue;
    }
    if (!engine
             .RebalanceMoves(svc->first, service.spec, service.spec_version, *service.replicas,
                             now_)
             .from.empty()) {
      store::Write w = store::Write::Put(
          "service", svc->first, ServiceRegistry::Rebalanced(Json::parse(service.body)).dump());
      w.IfRevision(service.revision);
      service_writes_.push_back(std::move(w));
    }
    it = state_.rebalance_due.erase(it);
  }
}

// A global service gets a preassigned pending task on each node without a
// runnable task of it (its tally's `covered`), named by
// orchestrator::GlobalTaskId, services by id and nodes by id, as the
// placement document's decoder makes them. A service whose tally or record
// moved is looked at on every node; the others only on the nodes added or
// updated since the last pass.
void Pass::GenerateGlobalTasksOnNodes() {
  const std::set<std::string>& dirty = DirtyServices();
  std::vector<std::string> added(changed_nodes_);
  std::sort(added.begin(), added.end());
  added.erase(std::unique(added.begin(), added.end()), added.end());
  std::erase_if(added, [&](const std::string& node) { return !state_.HasNode(node); });
  std::set<std::string, std::less<>> global;
  if (added.empty()) {
    for (const std::string& id : dirty)
      if (auto svc = service_by_id_.find(id); svc != service_by_id_.end() && !svc->second.replicas)
        global.insert(id);
  } else {
    global = GlobalServices();
  }
  for (const std::string& id : global) {
    const uint64_t version = service_by_id_.at(id).spec_version;
    if (dirty.contains(id)) {
      for (const auto& [node, stored] : nodes_) CoverNode(id, version, node);
    } else {
      for (const std::string& node : added) CoverNode(id, version, node);
    }
  }
}

TaskEntry* Pass::CoverNode(const std::string& service, uint64_t spec_version,
                           const std::string& node) {
  if (state_.TallyOf(service)->covered.contains(node)) return nullptr;
  // berthd's own nodes: none on a drained or not-ready one, as SwarmKit's
  // global orchestrator (a node an agent lists is the agent's to judge).
  if (agents_ == nullptr) {
    const auto stored = nodes_.find(node);
    if (stored == nodes_.end()) return nullptr;  // removed since its task ended
    const Node& n = stored->second.node;
    if (n.availability == NodeAvailability::kDrain || n.state != NodeState::kReady) return nullptr;
  }
  return &NewTask(service, spec_version, 0, node);
}

std::set<std::string, std::less<>> Pass::GlobalServices() const {
  std::set<std::string, std::less<>> global;
  for (const auto& [id, service] : service_by_id_)
    if (!service.replicas.has_value()) global.insert(id);
  return global;
}

// Ended tasks are grouped by where their history is kept (TaskHistory): a
// replicated service keeps `limit` per slot, a global service `limit` per
// node, a removed service none; the most recently written are kept. Only groups that grew or whose
// service changed are looked at. Tasks written by this pass join their group after its commit (they
// are the newest), and jobs' tasks stay until their job goes.
void Pass::PruneHistory(int64_t limit) {
  if (limit < 0) return;
  TaskHistory& history = state_.history();
  std::vector<std::string> groups = history.TakeGrown();
  if (summary.visited_all) groups = history.Groups();  // rebuilt: every group
  for (const std::string& id : DirtyServices())
    if (auto svc = service_by_id_.find(id); svc == service_by_id_.end() || svc->second.replicas)
      groups.push_back(id);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  auto valid = [&](const TaskHistory::Ended& ended) {
    const TaskEntry& e = tasks_[ended.position];
    return e.live() && e.revision == ended.revision && e.terminal() && !e.changed;
  };
  for (const std::string& group : groups) {
    const auto svc = service_by_id_.find(group.substr(0, group.find('\n')));
    uint64_t keep = 0;
    if (svc != service_by_id_.end()) keep = static_cast<uint64_t>(limit);
    for (uint32_t position : history.Trim(group, keep, valid)) Prune(tasks_[position]);
  }
}

void Pass::Prune(TaskEntry& e) {
  e.pruned = true;
  SetInPlan(e, false);
  Touch(e);
  ++summary.pruned;
}

void Pass::StampAssigned(Timestamp at) {
  for (size_t i : assigned_) tasks_[i].task.assigned_at = at;
  summary.assigned = static_cast<int>(assigned_.size());
}

void Pass::Committed(int64_t revision) {
  summary.visited = visit_.size();
  for (uint32_t position : touched_)
    summary.visited += !std::binary_search(visit_.begin(), visit_.end(), position);
  state_.EndPass(touched_, recorded_, revision);
  if (revision != 0)
    for (const store::Write& w : service_writes_) state_.PutOwnService(w.id, w.body, revision);
  if (admission_status_ && revision != 0) state_.admission_status = std::move(*admission_status_);
  if (agents_ == nullptr) return;
  agents_->Delivered({delivered_.begin(), delivered_.end()});
  agents_->Release(releases_);
}

// Writes go in (kind, id) order: the store's B-tree then takes a large
// batch of new tasks almost as appends (SQLite's commit of 100,000 new
// tasks measured about 10% shorter). The admission status and durations
// come first, then the tasks by id. Records are encoded
// in position order (the entries' memory order), before the sort.
std::vector<store::Write> Pass::Writes() {
  std::vector<uint32_t> positions;
  positions.reserve(touched_.size());
  for (uint32_t position : touched_)
    if (tasks_[position].pruned || tasks_[position].changed) positions.push_back(position);
  std::sort(positions.begin(), positions.end());
  std::vector<std::string> bodies(positions.size());
  auto encode = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (const TaskEntry& e = tasks_[positions[i]]; !e.pruned)
        bodies[i] = EncodeStoredTask(e.task);
  };
  // A large pass encodes 3/5 of its bodies on a second thread while this one
  // encodes the rest and orders the writes (about a fifth of the work).
  const size_t split =
      positions.size() >= kParallelEncodeFrom ? positions.size() * 2 / 5 : positions.size();
  std::thread helper;
  if (split < positions.size()) helper = std::thread(encode, split, positions.size());
  encode(0, split);
  std::vector<uint32_t> order(positions.size());  // indices into positions, by id
  std::iota(order.begin(), order.end(), 0);
  SortByIds(order, [&](uint32_t i) { return std::string_view(tasks_[positions[i]].task.id); });
  if (helper.joinable()) helper.join();
  std::vector<store::Write> writes;
  writes.reserve(positions.size());
  if (admission_status_)  // "admission" < "duration" < "service" < "task" < "update"
    writes.push_back(store::Write::Put("admission", "status", *admission_status_));
  std::sort(recorded_.begin(), recorded_.end());
  for (const std::string& name : recorded_) {
    const Recorded& recorded = durations_.at(name);
    store::Write w = store::Write::Put(
        "duration", name, Json{{"count", recorded.count}, {"total_ms", recorded.total_ms}}.dump());
    w.IfRevision(recorded.revision);
    writes.push_back(std::move(w));
  }
  for (const store::Write& w : service_writes_) writes.push_back(w);
  for (uint32_t i : order) {
    const TaskEntry& e = tasks_[positions[i]];
    store::Write w = e.pruned ? store::Write::Delete("task", e.task.id)
                              : store::Write::Put("task", e.task.id, std::move(bodies[i]));
    w.IfRevision(e.revision);
    writes.push_back(std::move(w));
  }
  for (store::Write& w : status_writes_) writes.push_back(std::move(w));
  for (const std::string& id : removed_updates_)
    writes.push_back(store::Write::Delete("update", id));
  return writes;
}

}  // namespace berth::daemon
