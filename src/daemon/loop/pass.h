// Pass: one control-loop pass's edits of berthd's StoredState (the steps of
// reconciler.h). The Reconciler makes one per pass, calls its steps in order,
// commits Writes() and then calls Committed(). The full-view placement and
// the steps shared by both paths are in pass.cc; the three-phase path
// (PlaceThroughAgents and what it needs) is in pass_agents.cc.
//
// A pass costs what changed: it visits the tasks StoredState::TakeVisit
// names (all of them only after a change that concerns every task), decides
// on the services whose tally moved (StoredState::TakeDirtyServices), and
// hands the engine, the store and the history only the tasks it visited or
// touched. Every edit of an entry goes through SetState or MarkChanged (or
// SetInPlan), which keep the touched list and the tallies in step.
//
// Not thread-safe: the control loop's thread only.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/plan_codec.h"
#include "core/status.h"
#include "core/time.h"
#include "daemon/loop/agent_placement.h"
#include "daemon/loop/full_view.h"
#include "daemon/loop/stored_state.h"
#include "executor/executor.h"
#include "fairshare/admission.h"
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

// How a pass treats the tasks of a node that stops being fit to run them
// (docs/berthd.md, "Tasks on drained, down and changed nodes").
struct LifecycleOptions {
  // A node whose state is down has its tasks replaced once it has been down
  // this long. Default 0: at once, as SwarmKit's orchestrator restarts the
  // tasks of a node its dispatcher marked down.
  Duration down_grace{0};
  // A node whose state is unknown or disconnected: default 15 s, the grace
  // SwarmKit's dispatcher gives a node before marking it down (heartbeat
  // period 5 s x grace multiplier 3).
  Duration unknown_grace{15'000};
};

class Pass {
 public:
  // `agents`: place through them (the three-phase path); null: the full-view
  // engine.
  Pass(Timestamp now, StoredState& state, executor::Executor& executor, AgentPlacement* agents,
       LifecycleOptions lifecycle = {})
      : now_(now),
        lifecycle_(lifecycle),
        state_(state),
        nodes_(state.nodes),
        service_by_id_(state.services),
        tasks_(state.tasks),
        task_index_(state.task_index),
        job_by_id_(state.jobs),
        durations_(state.durations),
        executor_(executor),
        agents_(agents) {
    for (const std::string& id : executor.TakeChanged()) state.QueueTask(id);
    visit_ = state.TakeVisit(now, &summary.visited_all);
    changed_nodes_ = state.TakeChangedNodes();
    // Positions may have moved: the rollouts' lists are rebuilt by the visit.
    if (summary.visited_all)
      for (auto& [id, update] : state.updates) {
        update.outdated.clear();
        update.in_flight.clear();
        update.candidates.clear();
        update.movers_chosen = false;
      }
  }
  // With agents: has their bindings compared with the stored tasks when due
  // (AgentPlacement::CheckBindings); a task its agent lost and could not
  // bind again fails (and is replaced like any other), or waits again if it
  // is a job's.
  void CheckAgentBindings();
  // Over the visit list: the executor's part, and stops.
  void StartAndStop();
  // Over the services whose tally moved.
  // Rolling updates, rollbacks and rebalances (pass_updates.cc), after
  // StartAndStop.
  void Update();
  void ScaleDown();
  void Admit(fairshare::Admission& admission);
  // Without agents: the full-view engine, kept across passes in `engine`.
  Status Place(FullView& engine);
  void PlaceThroughAgents();
  // Deletes the ended tasks of services beyond `limit` per slot
  // (reconciler.h); negative: keeps them all. Last step before Writes.
  void PruneHistory(int64_t limit);
  // Tasks placed by this pass record `at` as assigned_at: just before the
  // commit that stores them, so it marks when the placement is kept.
  void StampAssigned(Timestamp at);
  std::vector<store::Write> Writes();
  // After the pass's writes are stored at `revision` (0: it wrote nothing):
  // StoredState::EndPass, then the outcomes it applied and the bindings it
  // let go are told to the agents.
  void Committed(int64_t revision);
  PassSummary summary;

 private:
  // Sets the task's state and message; a task that left its node (ended, or
  // back to waiting) gives its agent's binding back after the commit.
  void SetState(TaskEntry& e, TaskState state, std::string message, bool stop = false);
  // `e` is written by this pass (its fields were edited).
  void MarkChanged(TaskEntry& e);
  // Whether the engine may see `e` (its service and node exist).
  void SetInPlan(TaskEntry& e, bool in_plan);
  // `e` goes into the touched list (written, synced to the engine, ended).
  void Touch(TaskEntry& e);
  // The services to decide on: those dirty so far in this pass.
  const std::set<std::string>& DirtyServices();
  // Gives `task_id`'s binding on `agent_id` back after the commit. An agent
  // releases every binding of a task id, so this pass does not submit a
  // task with that id (PlaceThroughAgents): the next one does.
  void ReleaseAfterCommit(const std::string& agent_id, const std::string& task_id);
  // A new pending task of `service` in `slot` (replicated) or on `node`
  // (global).
  TaskEntry& NewTask(const std::string& service, uint64_t spec_version, uint64_t slot,
                     const std::string& node);
  // Takes a placed task of a service off its node when it may not stay
  // (drained, down past its grace, no longer satisfying a constraint), with
  // the reason as its message; whether it did. A node within its grace has
  // the task visited again when the grace ends.
  bool LeaveNode(TaskEntry& e, const StoredService& service);
  // A task whose node went down: it is replaced, and stopped once the node
  // is back (it may still run there; the node is not reachable to say).
  void Abandon(TaskEntry& e, std::string message);
  // A service's task that ended by itself: replaced or kept by its
  // service's restart policy (orchestrator/restart_policy.h).
  void RestartOrKeep(TaskEntry& e, const StoredService& service);
  // Deletes `e` (ended) with this pass's commit.
  void Prune(TaskEntry& e);
  void ApplyOutcomes();
  void GenerateReplicas();
  void GenerateGlobalTasks();
  void GenerateGlobalTasksOnNodes();
  void RetireUnofferedGlobalTasks(
      const std::map<std::string, std::map<std::string, std::set<std::string>>>& offered);
  // A pending task of global service `service` preassigned to `node`,
  // unless a runnable task of it is there already (its tally's `covered`):
  // then null.
  TaskEntry* CoverNode(const std::string& service, uint64_t spec_version, const std::string& node);
  // Services without a replica count, by id.
  std::set<std::string, std::less<>> GlobalServices() const;
  // The runnable tasks of `service` the engine sees, by a visit of every
  // task: scale-down's rule when its tally cannot answer.
  std::vector<TaskEntry*> RunnableTasksOf(const std::string& service);
  std::shared_ptr<const TaskSpec> SpecOf(const TaskEntry& e) const;
  std::shared_ptr<const TaskSpec> SpecOf(const std::string& service) const;
  void RunJobTask(TaskEntry& e, bool killed, bool node_gone);
  void Outdated(TaskEntry& e, const std::string& service_id, const StoredService& service);
  void RebalanceCandidate(TaskEntry& e, const std::string& service_id,
                          const StoredService& service);
  void ChooseMovers(const std::string& service_id, const StoredService& service, ServiceUpdate& u,
                    const FullView* engine);
  // After the engine placed this pass's tasks: the movers of the
  // rebalances that start, then the rebalances nodes that joined call for.
  void ChooseAllMovers(const FullView& engine);
  void RebalanceOnJoin(const FullView& engine);
  void Young(TaskEntry& e, const std::string& service_id, const StoredService& service);
  ServiceUpdate& RolloutOf(const std::string& service_id, const StoredService& service);
  void RollOut(const std::string& service_id, const StoredService& service, ServiceUpdate& u);
  void PairInFlight(ServiceUpdate& u, std::set<uint32_t>& olds);
  const TaskEntry* RunningPartner(const TaskEntry& e) const;
  static std::string TakeRoom(ServiceUpdate& u);
  uint64_t StartFirstPairs(const ServiceUpdate& u) const;
  bool Landed(const std::pair<uint32_t, uint32_t>& flight, const orchestrator::UpdateConfig& config,
              bool moving, ServiceUpdate& u, std::string* failed_task);
  void FailureAction(const std::string& service_id, const StoredService& service,
                     const orchestrator::UpdateConfig& config, ServiceUpdate& u,
                     const std::string& failed_task);
  void StartBatch(const std::string& service_id, const StoredService& service,
                  const orchestrator::UpdateConfig& config, ServiceUpdate& u);
  void QueueStatus(const std::string& service_id, ServiceUpdate& u);
  // Old tasks of `service_id` a start-first update keeps running beside
  // their replacements.
  uint64_t Outgoing(const std::string& service_id) const;
  // The runnable task of the current version that holds `slot`, if any.
  std::optional<uint32_t> CurrentHolder(const std::string& service_id, const StoredService& service,
                                        uint64_t slot) const;
  void ExplainAdmission(const fairshare::Config& config, const fairshare::IterationResult& result);
  using ServiceIt = std::unordered_map<std::string, StoredService>::const_iterator;
  void Start(TaskEntry& e, ServiceIt svc);
  // What the executor is told of `e` (`svc`: its service, looked up by the
  // caller; end() for a job's task or a service that is gone).
  executor::TaskToRun ToRun(const TaskEntry& e, ServiceIt svc) const;
  const std::optional<SimulatedRun>& RunOf(const TaskEntry& e, ServiceIt svc) const;
  const executor::ProcessSpec* ProcessOf(const TaskEntry& e, ServiceIt svc) const;
  int64_t Finish(TaskEntry& e, ServiceIt svc);
  void Requeue(TaskEntry& e, std::string message);
  static const std::string& NameOf(const TaskEntry& e);
  int64_t Workers();
  std::optional<Duration> ExpectedDuration(const std::string& name) const;

  Timestamp now_;
  LifecycleOptions lifecycle_;
  StoredState& state_;
  // The StoredState's objects, by id; tasks and durations are edited in place.
  const std::map<std::string, StoredNode, std::less<>>& nodes_;
  std::unordered_map<std::string, StoredService>& service_by_id_;  // counts runnable
  TaskEntries& tasks_;
  std::unordered_map<std::string, size_t>& task_index_;
  const std::map<std::string, StoredJob, std::less<>>& job_by_id_;
  std::map<std::string, Recorded, std::less<>>& durations_;
  executor::Executor& executor_;
  bool exiting_ = false;  // Finish is storing how a task ended by itself
  AgentPlacement* agents_;
  std::map<std::string, std::vector<std::string>> releases_;  // task ids by agent id
  std::set<std::string, std::less<>> releasing_;              // every id in releases_
  std::set<std::string, std::less<>> delivered_;              // outcomes applied
  std::vector<size_t> assigned_;                              // tasks_ placed by this pass
  std::vector<uint32_t> visit_;             // positions this pass visits (StoredState::TakeVisit)
  std::vector<std::string> changed_nodes_;  // added or updated since the last pass
  std::vector<uint32_t> touched_;           // positions it edited or synced (TaskEntry::touched)
  std::vector<std::string> recorded_;  // names of the durations it recorded (Recorded::changed)
  std::set<std::string> dirty_services_;
  std::optional<std::string> admission_status_;  // to store: it changed
  // Rollout statuses that changed, removed services' statuses, and the
  // services an automatic rollback rewrites (with revision preconditions).
  std::vector<store::Write> status_writes_, service_writes_;
  std::vector<std::string> removed_updates_;
};

}  // namespace berth::daemon
