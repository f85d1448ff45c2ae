// Pass: the core of one control-loop pass (reconciler.h). The steps
// (steps/*.h) decide what happens to each task; the Pass is how they change
// it: every edit of a task goes through SetState, MarkChanged, SetInPlan,
// NewTask, Requeue or Prune, which keep the touched list and the tallies in
// step, and what a step stores besides tasks (a service, a rollout's status,
// the admission status, a duration) is queued here. The Reconciler makes one
// per pass, runs the steps in order, commits Writes() and then calls
// Committed().
//
// A pass costs what changed: it visits the tasks StoredState::TakeVisit
// names (all of them only after a change that concerns every task), decides
// on the services whose tally moved (DirtyServices), and hands the engine,
// the store and the history only the tasks it visited or touched.
//
// Not thread-safe: the control loop's thread only.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/histogram.h"
#include "core/status.h"
#include "core/time.h"
#include "daemon/loop/agent_placement.h"
#include "daemon/loop/stored_state.h"
#include "executor/executor.h"
#include "store/store.h"

namespace berth::daemon {

// What one pass did: counts for berthd's log and metrics, and whether the
// control loop may call the state settled.
struct PassSummary {
  int created = 0, assigned = 0, started = 0, stopped = 0, pending = 0, admitted = 0, pruned = 0;
  // Tasks the pass looked at (its visit list and the tasks it touched), and
  // whether that was every task: what a pass costs.
  size_t visited = 0;
  bool visited_all = false;
  bool wrote = false;  // false: the pass found nothing to change
  // Tasks are with the external agents, or their outcomes are not stored
  // yet: the state is not settled although this pass changed nothing.
  bool waiting = false;
  // When a pass is next needed although nothing changes (a simulated task
  // ends, a timer fires); nullopt: only a change needs one.
  std::optional<Timestamp> next_due;

  void DueAt(Timestamp at) { next_due = next_due ? std::min(*next_due, at) : at; }
};

class Pass {
 public:
  using ServiceIt = StoredState::Services::const_iterator;

  // `agents`: the pass places through them (the three-phase path); null:
  // the full-view engine.
  Pass(Timestamp now, StoredState& state, executor::Executor& executor, AgentPlacement* agents);

  Timestamp now() const { return now_; }
  bool on_agents() const { return agents_ != nullptr; }
  // The positions this pass visits (StoredState::TakeVisit), in order.
  const std::vector<uint32_t>& visit() const { return visit_; }
  // Nodes added or updated since the last pass, by id.
  const std::vector<std::string>& changed_nodes() const { return changed_nodes_; }
  // The positions edited or synced so far (TaskEntry::touched).
  const std::vector<uint32_t>& touched() const { return touched_; }
  // The services to decide on: those whose tally or record moved so far.
  const std::set<std::string>& DirtyServices();

  // What the steps read of the state.
  const StoredState::Services& services() const { return state_.services(); }
  const std::set<std::string, std::less<>>& global_services() const {
    return state_.global_services();
  }
  ServiceIt FindService(const std::string& id) const { return services().find(id); }
  const StoredState::Nodes& nodes() const { return state_.nodes(); }
  bool HasNode(const std::string& id) const { return state_.HasNode(id); }
  const StoredState::Jobs& jobs() const { return state_.jobs(); }
  std::span<TaskEntry> tasks() { return state_.tasks(); }
  TaskEntry& task(uint32_t position) { return state_.task(position); }
  TaskEntry* FindTask(std::string_view id) { return state_.FindTask(id); }
  uint32_t PositionOf(const TaskEntry& e) const { return state_.PositionOf(e); }
  const orchestrator::ServiceTally& TallyOf(const std::string& service) const {
    return *state_.TallyOf(service);
  }
  const std::set<uint32_t>& pending() const { return state_.pending(); }
  // The history group of an ended service task (StoredState::HistoryGroupOf).
  std::string HistoryGroupOf(const TaskEntry& e) const { return state_.HistoryGroupOf(e); }
  // Visit `position` again once `due` has passed.
  void CheckAt(uint32_t position, Timestamp due) { state_.CheckAt(position, due); }
  // The template `e` runs (a service's current or previous one, or its
  // job's), and a service's current one; null when it does not decode.
  std::shared_ptr<const TaskSpec> SpecOf(const TaskEntry& e) const;
  std::shared_ptr<const TaskSpec> SpecOf(const std::string& service) const;
  // How a berth-node runs `e` (its template's or its job's process, the
  // job's `{{.Index}}` expanded); null when it has no command. A copy, for
  // an agent that runs it.
  std::shared_ptr<const executor::ProcessSpec> SharedProcessOf(const TaskEntry& e) const;

  // Edits. Sets the task's state and message; a task the loop takes off its
  // node is stopped by its executor, and gives its agent's binding back
  // after the commit.
  void SetState(TaskEntry& e, TaskState state, std::string message, bool stop = false);
  // `e` is written by this pass (its fields were edited).
  void MarkChanged(TaskEntry& e);
  // Whether the engine may see `e` (its service and node exist).
  void SetInPlan(TaskEntry& e, bool in_plan);
  // Brings the tallies in line with `e`'s fields, edited directly by a step
  // after NewTask (which counted it already).
  void Recount(TaskEntry& e) { state_.Recount(e); }
  // `e` goes into the touched list (written, synced to the engine, ended).
  void Touch(TaskEntry& e);
  // A new pending task of `service` in `slot` (replicated) or on `node`
  // (global); its id is new for the life of the store (orchestrator::TaskId).
  TaskEntry& NewTask(const std::string& service, uint64_t spec_version, uint64_t slot,
                     const std::string& node);
  // Grows the entries ahead of `count` new tasks.
  void ReserveNewTasks(size_t count) { state_.ReserveTasks(state_.tasks().size() + count); }
  // A task back to waiting for admission, off its node (a job's task; its
  // run is stopped, and its next one has a new attempt).
  void Requeue(TaskEntry& e, std::string message);
  // The state an ended job's task is meant to be in (complete, or shutdown
  // when it failed for good), instead of running.
  void SetDesired(TaskEntry& e, TaskState desired);
  // Deletes `e` (ended) with this pass's commit.
  void Prune(TaskEntry& e);

  // The executor. An assigned task starts (running, unless its executor
  // runs it elsewhere and a node will say so).
  void Start(TaskEntry& e, ServiceIt svc);
  // Whether a running task ended: the time it ran, or -1 while it runs on
  // (the executor's timer then becomes the pass's). `svc`: its service, or
  // services().end() for a job's task.
  int64_t Finish(TaskEntry& e, ServiceIt svc);

  // Bindings on agents. Gives `task_id`'s binding on `agent_id` back after
  // the commit; an agent releases every binding of a task id, so the pass
  // does not submit a task with that id until the next pass.
  void ReleaseAfterCommit(const std::string& agent_id, const std::string& task_id);
  bool Releasing(const std::string& task_id) const { return releasing_.contains(task_id); }
  // An agent's outcome for `task_id` applied by this pass: false if it was
  // already.
  bool Deliver(const std::string& task_id) { return delivered_.insert(task_id).second; }

  // What the pass stores besides tasks.
  void Assigned(uint32_t position) { assigned_.push_back(position); }
  size_t assigned_count() const { return assigned_.size(); }
  void RecordDuration(const std::string& name, int64_t ms);
  const Recorded* FindDuration(const std::string& name) const { return state_.FindDuration(name); }
  // Stores the admission status if it differs from the one stored.
  void SetAdmissionStatus(std::string status);
  // A service the loop rewrites (an automatic rollback, an on-join
  // rebalance), with its revision precondition.
  void WriteService(store::Write w) { service_writes_.push_back(std::move(w)); }
  void WriteRolloutStatus(store::Write w) { status_writes_.push_back(std::move(w)); }
  void DeleteRolloutStatus(const std::string& service) { removed_updates_.push_back(service); }

  // Tasks placed by this pass record `at` as assigned_at: just before the
  // commit that stores them, so it marks when the placement is kept.
  void StampAssigned(Timestamp at);
  std::vector<store::Write> Writes();
  // After the pass's writes are stored at `revision` (0: it wrote nothing):
  // StoredState::EndPass, then the outcomes it applied and the bindings it
  // let go are told to the agents. `revisions`, when not empty, is each
  // write's own revision (a pass committed in parts): the tasks, durations
  // and services written take theirs, so the next pass's preconditions
  // hold.
  void Committed(int64_t revision, const std::vector<int64_t>& revisions = {});
  // After the commit: each task this pass placed, or started, for the first
  // time (attempt 0; a job task's later attempts are left out) adds its
  // time since created_at to `to_assigned` or `to_running`.
  void ObserveLatencies(Histogram& to_assigned, Histogram& to_running) const;

  PassSummary summary;

 private:
  // What the executor is told of `e` (`svc`: its service, looked up by the
  // caller; end() for a job's task or a service that is gone).
  executor::TaskToRun ToRun(const TaskEntry& e, ServiceIt svc) const;
  const std::optional<SimulatedRun>& RunOf(const TaskEntry& e, ServiceIt svc) const;
  bool WaitsForStoppingCopy(TaskEntry& e);
  const executor::ProcessSpec* ProcessOf(const TaskEntry& e, ServiceIt svc) const;
  const executor::ProcessSpec* JobProcessOf(const TaskEntry& e) const;
  // The id `e`'s current run has on its node (RunIdOf); valid for the pass.
  const std::string& RunIdRef(const TaskEntry& e) const;

  Timestamp now_;
  StoredState& state_;
  executor::Executor& executor_;
  AgentPlacement* agents_;
  bool exiting_ = false;  // Finish is storing how a task ended by itself
  std::map<std::string, std::vector<std::string>> releases_;  // task ids by agent id
  std::set<std::string, std::less<>> releasing_;              // every id in releases_
  std::set<std::string, std::less<>> delivered_;              // outcomes applied
  std::vector<uint32_t> assigned_;                            // positions placed by this pass
  std::vector<uint32_t> started_;                             // positions it started
  std::vector<uint32_t> visit_;
  std::vector<std::string> changed_nodes_;
  std::vector<uint32_t> touched_;
  std::vector<std::string> recorded_;  // names of the durations it recorded (Recorded::changed)
  std::set<std::string> dirty_services_;
  std::optional<std::string> admission_status_;  // to store: it changed
  // Rollout statuses that changed, removed services' statuses, and the
  // services the loop rewrites (with revision preconditions).
  std::vector<store::Write> status_writes_, service_writes_;
  std::vector<std::string> removed_updates_;
  // Where Writes() put them: the first duration's and service's write, and
  // each task written (not deleted) as (its write, its position).
  size_t durations_at_ = 0, services_at_ = 0;
  std::vector<std::pair<size_t, uint32_t>> written_tasks_;
  // What ToRun hands the executor by reference: later runs' ids and
  // expanded job processes (deques: their elements never move).
  mutable std::deque<std::string> run_ids_;
  mutable std::deque<executor::ProcessSpec> expanded_;
};

}  // namespace berth::daemon
