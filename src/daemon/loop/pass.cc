#include "daemon/loop/pass.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "api/process_codec.h"
#include "core/id_order.h"
#include "orchestrator/orchestrator.h"

namespace berth::daemon {
namespace {

// Writes() encodes on two threads from this many bodies: below it, starting
// a thread costs more than it saves (100,000 bodies: 45 ms on one thread,
// 24-30 on two, on the machine of docs/benchmarks.md).
constexpr size_t kParallelEncodeFrom = 20'000;

}  // namespace

using api::Json;

Pass::Pass(Timestamp now, StoredState& state, executor::Executor& executor, AgentPlacement* agents)
    : now_(now), state_(state), executor_(executor), agents_(agents) {
  // A job's task reports under its run's id (RunIdOf).
  for (const std::string& id : executor.TakeChanged())
    state.QueueTask(std::string(TaskIdOfRun(id)));
  visit_ = state.TakeVisit(now, &summary.visited_all);
  changed_nodes_ = state.TakeChangedNodes();
  if (summary.visited_all) state.rollouts().ForgetPositions();
}

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
        e.task.service.empty() ? state_.services().end() : state_.services().find(e.task.service);
    const executor::ProcessSpec* process = ProcessOf(e, svc);
    executor_.Stop({RunIdRef(e), stopped_on, RunOf(e, svc), e.task.started_at, process});
    if (process != nullptr && !e.task.service.empty())
      state_.stopping_copies().Stopped(state_.HistoryGroupOf(e),
                                       {std::string(RunIdRef(e)), stopped_on,
                                        now_ + process->stop_grace_period + kStopReportSlack},
                                       now_);
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
// Its id is new for the life of the store (orchestrator::TaskId).
TaskEntry& Pass::NewTask(const std::string& service, uint64_t spec_version, uint64_t slot,
                         const std::string& node) {
  std::string id =
      orchestrator::TaskId(service, slot != 0 ? std::to_string(slot) : node, state_.revision());
  ++summary.created;
  TaskEntry& e = state_.EntryFor(id);
  state_.Retire(e);  // nothing, unless the store was written behind berthd's back
  e.task = StoredTask();
  e.task.id = std::move(id);
  e.task.state = TaskState::kPending;
  e.task.created_at = now_;
  e.task.service = service;
  e.task.spec_version = spec_version;
  e.task.slot = slot;
  e.task.node = node;
  e.in_plan = true;
  MarkChanged(e);
  return e;
}
// Its next run gets a new id on the node (RunIdOf), after the stop of this
// one went out under the old id.
void Pass::Requeue(TaskEntry& e, std::string message) {
  SetState(e, TaskState::kNew, std::move(message));
  ++e.task.attempt;
  e.task.node.clear();
  e.task.admitted_at.reset();
  e.task.assigned_at.reset();
  e.task.started_at.reset();
  SetInPlan(e, false);
  state_.Recount(e);  // without its node
}
void Pass::SetDesired(TaskEntry& e, TaskState desired) {
  if (e.task.desired == desired) return;
  e.task.desired = desired;
  MarkChanged(e);
}
void Pass::Prune(TaskEntry& e) {
  e.pruned = true;
  SetInPlan(e, false);
  Touch(e);
  ++summary.pruned;
}
// An executor that starts the task elsewhere (a berth-node) leaves it
// assigned until the node says it runs.
void Pass::Start(TaskEntry& e, ServiceIt svc) {
  if (WaitsForStoppingCopy(e)) return;
  executor::TaskToRun task = ToRun(e, svc);
  task.started_at.reset();
  std::optional<std::string> message = executor_.Start(task, now_);
  if (!message) return;
  SetState(e, TaskState::kRunning, std::move(*message));
  e.task.started_at = now_;
  started_.push_back(state_.PositionOf(e));
  ++summary.started;
}
// A service task does not start while the copy the loop stopped in its
// slot may still run (StoppingCopies): it stays assigned, saying why, until
// that copy's machine reports its end or the wait's bound passes.
bool Pass::WaitsForStoppingCopy(TaskEntry& e) {
  if (e.task.service.empty() || state_.stopping_copies().empty()) return false;
  const std::string group = state_.HistoryGroupOf(e);
  StoppingCopies::Copy* copy = state_.stopping_copies().Of(group);
  if (copy == nullptr || copy->run_id == e.task.id) return false;
  if (now_ < copy->until && executor_.Stopping(copy->run_id, e.task.id)) {
    std::string message = "waiting for " + copy->run_id + " to stop on node '" + copy->node +
                          "' (at most until " + FormatRfc3339(copy->until) + ")";
    if (e.task.message != message) {
      e.task.message = std::move(message);
      e.task.updated_at = now_;
      MarkChanged(e);
    }
    copy->waited = true;
    state_.CheckAt(state_.PositionOf(e), copy->until);
    return true;
  }
  if (copy->waited) {
    e.task.message = now_ < copy->until ? copy->run_id + " stopped; starting"
                                        : copy->run_id + " did not report its end by " +
                                              FormatRfc3339(copy->until) + "; starting";
    e.task.updated_at = now_;
    MarkChanged(e);
  }
  state_.stopping_copies().Forget(group);
  return false;
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
// How the simulated executor runs `e`: a job's task by its own run (one
// stored without ends at once: a job's task always has one), a service's
// task by its service's (`svc`, looked up by the caller; none if it is gone).
executor::TaskToRun Pass::ToRun(const TaskEntry& e, ServiceIt svc) const {
  return {RunIdRef(e),       e.task.node,       RunOf(e, svc),
          e.task.started_at, ProcessOf(e, svc), e.task.agent};
}
// A first run's id is the task's own; a later run's is kept for the pass.
const std::string& Pass::RunIdRef(const TaskEntry& e) const {
  if (e.task.attempt == 0) return e.task.id;
  return run_ids_.emplace_back(RunIdOf(e.task.id, e.task.attempt));
}
const std::optional<SimulatedRun>& Pass::RunOf(const TaskEntry& e, ServiceIt svc) const {
  static const std::optional<SimulatedRun> kNone, kEndsAtOnce = SimulatedRun{};
  if (!e.task.job.empty()) return e.task.run ? e.task.run : kEndsAtOnce;
  if (svc == state_.services().end()) return kNone;
  // A task of an older template runs as that version did (previous_spec).
  if (svc->second.RunsPrevious(e.task.spec_version)) return svc->second.previous_run;
  return svc->second.run;
}
// How a berth-node runs `e`: its version's template's process, or its job's
// with `{{.Index}}` expanded to the task's index (kept for the pass: the
// executor copies what it keeps).
const executor::ProcessSpec* Pass::ProcessOf(const TaskEntry& e, ServiceIt svc) const {
  if (!e.task.job.empty()) return JobProcessOf(e);
  if (svc == state_.services().end()) return nullptr;
  if (svc->second.RunsPrevious(e.task.spec_version)) return svc->second.previous_process.get();
  return svc->second.process.get();
}
std::shared_ptr<const executor::ProcessSpec> Pass::SharedProcessOf(const TaskEntry& e) const {
  const executor::ProcessSpec* process = ProcessOf(e, FindService(e.task.service));
  if (process == nullptr) return nullptr;
  return std::make_shared<const executor::ProcessSpec>(*process);
}
// With per-task "commands", task i runs line i with what the template gives
// every task.
const executor::ProcessSpec* Pass::JobProcessOf(const TaskEntry& e) const {
  const auto it = state_.jobs().find(e.task.job);
  if (it == state_.jobs().end() || !it->second.process) return nullptr;
  const StoredJob& job = it->second;
  if (!job.indexed && !job.commands) return job.process.get();
  const std::string_view id = e.task.id;
  const int64_t index = std::strtoll(id.substr(id.rfind('.') + 1).data(), nullptr, 10);
  // The registry checked that the template expands.
  Result<executor::ProcessSpec> expanded =
      job.indexed ? api::ExpandProcessIndex(*job.process, "task", index)
                  : Result<executor::ProcessSpec>(*job.process);
  if (!expanded.ok()) return nullptr;
  if (job.commands) {
    if (index < 1 || static_cast<size_t>(index) > job.commands->size()) return nullptr;
    *expanded = api::WithCommandLine(std::move(*expanded), (*job.commands)[index - 1]);
  }
  return &expanded_.emplace_back(std::move(*expanded));
}
// A service's task runs its service's template, a job's task its job's
// (both decoded once, when the store's change was read).
// A task of an older version still running (a rolling update has not
// reached it) holds what its own template reserves: the previous one, which
// is the template of every older version in a rollout of one step.
std::shared_ptr<const TaskSpec> Pass::SpecOf(const TaskEntry& e) const {
  if (!e.task.service.empty()) {
    const auto it = state_.services().find(e.task.service);
    if (it == state_.services().end()) return nullptr;
    const StoredService& s = it->second;
    if (s.RunsPrevious(e.task.spec_version)) return s.previous_spec;
    return s.spec;
  }
  const auto job = state_.jobs().find(e.task.job);
  return job == state_.jobs().end() ? nullptr : job->second.spec;
}
std::shared_ptr<const TaskSpec> Pass::SpecOf(const std::string& service) const {
  const auto it = state_.services().find(service);
  return it == state_.services().end() ? nullptr : it->second.spec;
}
void Pass::RecordDuration(const std::string& name, int64_t ms) {
  Recorded& recorded = state_.DurationOf(name);
  ++recorded.count;
  recorded.total_ms += ms;
  if (!std::exchange(recorded.changed, true)) recorded_.push_back(name);
}

void Pass::SetAdmissionStatus(std::string status) {
  if (status != state_.admission_status()) admission_status_ = std::move(status);
}

void Pass::StampAssigned(Timestamp at) {
  for (size_t i : assigned_) state_.task(i).task.assigned_at = at;
  summary.assigned = static_cast<int>(assigned_.size());
}
void Pass::ObserveLatencies(Histogram& to_assigned, Histogram& to_running) const {
  auto observe = [&](Histogram& h, const std::vector<uint32_t>& positions, auto since_created) {
    for (uint32_t position : positions) {
      const StoredTask& t = state_.task(position).task;
      const std::optional<Timestamp> at = since_created(t);
      // Negative: the task was made by a leader whose clock ran ahead.
      if (t.attempt == 0 && t.created_at && at && *at >= *t.created_at)
        h.Observe(*at - *t.created_at);
    }
  };
  observe(to_assigned, assigned_, [](const StoredTask& t) { return t.assigned_at; });
  observe(to_running, started_, [](const StoredTask& t) { return t.started_at; });
}
void Pass::Committed(int64_t revision, const std::vector<int64_t>& revisions) {
  summary.visited = visit_.size();
  for (uint32_t position : touched_)
    summary.visited += !std::binary_search(visit_.begin(), visit_.end(), position);
  PartRevisions parts;
  if (!revisions.empty()) {
    for (const auto& [write, position] : written_tasks_)
      parts.tasks.emplace_back(position, revisions[write]);
    std::sort(parts.tasks.begin(), parts.tasks.end());
    for (size_t i = 0; i < recorded_.size(); ++i)
      parts.durations.push_back(revisions[durations_at_ + i]);
  }
  state_.EndPass(touched_, recorded_, revision, parts);
  if (revision != 0)
    for (size_t i = 0; i < service_writes_.size(); ++i)
      state_.PutOwnService(service_writes_[i].id, service_writes_[i].body,
                           revisions.empty() ? revision : revisions[services_at_ + i]);
  if (admission_status_ && revision != 0)
    state_.set_admission_status(std::move(*admission_status_));
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
    if (state_.task(position).pruned || state_.task(position).changed)
      positions.push_back(position);
  std::sort(positions.begin(), positions.end());
  std::vector<std::string> bodies(positions.size());
  auto encode = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (const TaskEntry& e = state_.task(positions[i]); !e.pruned)
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
  SortByIds(order, [&](uint32_t i) { return std::string_view(state_.task(positions[i]).task.id); });
  if (helper.joinable()) helper.join();
  std::vector<store::Write> writes;
  writes.reserve(positions.size());
  if (admission_status_)  // "admission" < "duration" < "service" < "task" < "update"
    writes.push_back(store::Write::Put("admission", "status", *admission_status_));
  std::sort(recorded_.begin(), recorded_.end());
  durations_at_ = writes.size();
  for (const std::string& name : recorded_) {
    const Recorded& recorded = state_.DurationOf(name);
    store::Write w = store::Write::Put(
        "duration", name, Json{{"count", recorded.count}, {"total_ms", recorded.total_ms}}.dump());
    w.IfRevision(recorded.revision);
    writes.push_back(std::move(w));
  }
  services_at_ = writes.size();
  for (const store::Write& w : service_writes_) writes.push_back(w);
  written_tasks_.clear();
  for (uint32_t i : order) {
    const TaskEntry& e = state_.task(positions[i]);
    if (!e.pruned) written_tasks_.emplace_back(writes.size(), positions[i]);
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
