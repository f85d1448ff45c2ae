// StoredState: what berthd's control loop knows of the store between passes
// (reconciler.h): every node, service, task, job and recorded duration,
// decoded once into typed records (a node's api::DecodeNode, a task's
// stored_task.h; JSON stays at this boundary) and then kept up to date from
// the store's changes (store::WatchedStore), so a pass decodes what changed
// instead of the whole cluster. A pass edits tasks and durations in place
// and marks them `changed`; it commits them with WatchedStore::CommitOwn, so
// they do not come back as changes, and Committed records their new
// revision. When a pass fails, its edits are not in the store: Invalidate,
// and the next Refresh reads everything again.
//
// So that a pass costs what changed, not the cluster, it also keeps:
//  - the visit list: the tasks the next pass must look at (those the store
//    changed, those the last pass wrote, those of a job that changed, those
//    whose executor timer fell due). A change that concerns every task (a
//    removed node or service, a new spec version, the first load) makes the
//    next pass visit them all (TakeVisit); an added or updated node only
//    goes to the engine (TakeChangedNodes) and to the global services.
//  - a tally per service (orchestrator::ServiceTally): runnable, pending and
//    used replica numbers, per node for global services. Every edit of a
//    task's state, desired state, node or `in_plan` is followed by Recount;
//    a service whose tally moved is dirty (TakeDirtyServices).
//  - the pending tasks (by position) for the three-phase path.
//  - the ended tasks per history group (TaskHistory).
// Positions in `tasks` are stable: a deleted task leaves a free entry (empty
// id) until TakeVisit compacts them, which also moves `layout_generation`.
//
// Not thread-safe: the control loop owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/json_fields.h"
#include "constraint/constraint.h"
#include "core/node.h"
#include "core/prefault_allocator.h"
#include "core/status.h"
#include "core/task.h"
#include "core/time.h"
#include "daemon/loop/stored_task.h"
#include "daemon/loop/task_history.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/restart_policy.h"
#include "orchestrator/service_tally.h"
#include "orchestrator/update_config.h"
#include "store/watched_store.h"

namespace berth::daemon {

// A stored task, with what the loop keeps about it between passes.
struct TaskEntry {
  StoredTask task;
  int64_t revision = 0;  // 0: created by this pass
  bool changed = false;
  bool in_plan = true;  // handed to the placement engine
  bool pruned = false;  // ended and beyond the history limit: deleted by this pass
  // StoredState's bookkeeping: in the next pass's visit list; in this pass's
  // touched list (Pass); how the task counts in its service's tally, which
  // tally that is and its replica number there (-1: none), both cached
  // while it counts (the id and service of a counted entry do not change).
  bool queued = false, touched = false;
  uint8_t tally = 0;
  int32_t number = -1;
  orchestrator::ServiceTally* counted_in = nullptr;
  // The full-view engine's record of the task (FullView): its index there,
  // valid while engine_generation is the engine's; kNotInEngine when the
  // engine has none (never had, or forgot it).
  static constexpr uint32_t kNotInEngine = UINT32_MAX;
  uint32_t engine_index = kNotInEngine;
  uint64_t engine_generation = 0;

  bool live() const { return !task.id.empty(); }  // false: a free entry
  bool terminal() const { return task.state > TaskState::kRunning; }
  // Fills one of its service's slots: not finished and still meant to run.
  bool runnable() const { return orchestrator::Runnable(task.state, task.desired); }
  // Seen by the placement engine: not if its service or node is gone
  // (in_plan), nor if the running pass stopped it while it ran (one that
  // ended, and whose restart set its desired state, still tells the engine
  // its failure: the faulty-node rule).
  bool planned() const {
    return in_plan && !(changed && task.desired == TaskState::kShutdown && !terminal());
  }
  // Holds a binding on its agent (the agent's capacity).
  bool bound_on_agent() const {
    return !task.agent.empty() && task.state >= TaskState::kAssigned && !terminal();
  }
};

// The entries by position, prefaulted: a large service fills millions
// of them at once (core/prefault_allocator.h).
using TaskEntries = std::vector<TaskEntry, PrefaultAllocator<TaskEntry>>;

struct Recorded {  // durations recorded for one task name
  int64_t count = 0, total_ms = 0, revision = 0;
  bool changed = false;
};

// A node as the loop keeps it, decoded once when the store changes it.
struct StoredNode {
  Node node;          // what the placement engine sees, when `error` is empty
  int64_t slots = 1;  // workers it gives fair-share admission while ready and active
  std::string error;  // why its stored body is not a valid node ("": it is)
};

// A service and what a pass's scans read of it, decoded once.
struct StoredService {
  std::optional<uint64_t> replicas;  // replicated services only
  uint64_t spec_version = 0;
  // The store's revision when it was created: a task of its name whose id
  // has a lower serial (orchestrator::SerialOf) belonged to an earlier
  // service of that name, removed since.
  int64_t incarnation = 0;
  // Its template's constraints, parsed once: enforced on its running tasks.
  std::vector<constraint::Constraint> constraints;
  orchestrator::RestartPolicy restart;
  orchestrator::UpdateConfig update, rollback;
  bool rolling_back = false;  // its last spec version came from a rollback
  bool rebalancing = false;   // its last spec version came from a rebalance
  // Tasks of versions from this one on run the current template (a
  // rebalance makes a version without a new one: api::TemplateVersionOf).
  uint64_t template_version = 0;
  bool rebalance_on_join = false;  // "rebalance": "on-join"
  // Its stored body and revision: the loop's automatic rollback rewrites it.
  std::string body;
  int64_t revision = 0;
  std::shared_ptr<const TaskSpec> spec;  // its task template; null if it does not decode
  // The template before the current one (previous_task), if any: what its
  // tasks of versions before template_version run until a rolling update
  // replaces them.
  std::shared_ptr<const TaskSpec> previous_spec;
  std::optional<SimulatedRun> run;           // the simulated executor ends its tasks
  std::optional<SimulatedRun> previous_run;  // its tasks of older versions (previous_spec)
  // How a berth-node runs its tasks (the template's command), and its tasks
  // of older versions; null: no command.
  std::shared_ptr<const executor::ProcessSpec> process, previous_process;

  // Whether a task of `version` runs previous_spec (not the current template).
  bool RunsPrevious(std::optional<uint64_t> version) const {
    return version.value_or(0) < template_version && previous_spec != nullptr;
  }
};

// A service's rollout of a spec version (a rolling update or a rollback),
// as Pass::Update drives it; its status is stored as kind "update" (id: the
// service) and shown with the service (docs/api.md, "update_status").
struct ServiceUpdate {
  uint64_t spec_version = 0;  // the version it rolls out
  // updating | paused | completed | rollback_started | rollback_paused |
  // rollback_completed (Docker's UpdateStatus states).
  std::string state;
  std::string message;
  std::optional<Timestamp> started_at, completed_at;
  // Placed tasks of older versions not replaced yet (positions; checked
  // before use), and the replacements in flight with the task each
  // replaces (kNone: already stopped, stop-first).
  static constexpr uint32_t kNone = UINT32_MAX;
  std::set<uint32_t> outdated;
  std::vector<std::pair<uint32_t, uint32_t>> in_flight;
  // A rebalance's tasks of older versions on nodes, until its movers are
  // chosen (Pass::ChooseMovers): those go to `outdated`, the others stay.
  // `room`: by node id, the replacements the target still sends there.
  std::set<uint32_t> candidates;
  std::map<std::string, uint32_t> room;
  bool movers_chosen = false;
  uint64_t replaced = 0, failures = 0;
  Timestamp next_batch_at;
  std::string stored;  // the status as last read or written
  bool active() const { return state == "updating" || state == "rollback_started"; }
  bool paused() const { return state == "paused" || state == "rollback_paused"; }
};

struct StoredJob {
  std::string requestor;  // its fair-share class's member
  int64_t tasks = 0;      // its tasks are "<job>.1" .. "<job>.<tasks>"
  int64_t revision = 0;   // admission takes jobs in this (arrival) order
  bool killed = false;
  // Its tasks' template (the job's "task"); null if it does not decode.
  std::shared_ptr<const TaskSpec> spec;
};

class StoredState {
 public:
  // Brings the state up to date: everything on the first call and after
  // Invalidate, the store's changes since the last call otherwise.
  Status Refresh(store::WatchedStore& store);
  void Invalidate() { loaded_ = false; }
  // A service the loop itself stored at `revision` (an automatic rollback):
  // its own commits do not come back as changes.
  void PutOwnService(const std::string& id, const std::string& body, int64_t revision) {
    if (!Apply({store::Write::Op::kPut, "service", id, body, revision}).ok()) loaded_ = false;
  }
  // The store's revision when Refresh last returned: the serial of the ids
  // of the tasks the next pass makes (orchestrator::TaskId).
  int64_t revision = 0;
  // The pass that touched `touched` (positions) and recorded durations
  // under `recorded` (names) ends: if it committed at `revision` (0: it
  // wrote nothing), its changed entries and durations take the revision and
  // the entries are visited again by the next pass, its ended ones join
  // their history group, its pruned ones are deleted.
  void EndPass(const std::vector<uint32_t>& touched, const std::vector<std::string>& recorded,
               int64_t revision);

  // The tasks the next pass visits (positions, in order), taken from the
  // visit list and the executor timers due at `now`. `all`: every task
  // (then every tally, the pending set and the history were rebuilt, and
  // every service is dirty).
  std::vector<uint32_t> TakeVisit(Timestamp now, bool* all);
  // Visit `position` again once `due` has passed (an executor's timer).
  void CheckAt(uint32_t position, Timestamp due);
  // Visit task `id` in the next pass, if it is stored.
  void QueueTask(const std::string& id);
  // The earliest executor timer, if any.
  std::optional<Timestamp> NextTimer() const;
  // Brings the tallies and the pending set in line with `e`'s fields.
  void Recount(TaskEntry& e);
  // Before `e` is replaced by a new task: it leaves every count and its
  // history group (TaskHistory::MarkStale).
  void Retire(TaskEntry& e);
  // A new entry for task `id` (not stored yet); its position.
  uint32_t NewEntry(const std::string& id);
  uint32_t PositionOf(const TaskEntry& e) const { return static_cast<uint32_t>(&e - tasks.data()); }
  const orchestrator::ServiceTally* TallyOf(const std::string& service) const;
  // Services whose tally or record changed since the last call, by id.
  std::set<std::string> TakeDirtyServices();
  // Positions of the runnable pending tasks the engine sees, in order; kept
  // only when `track_pending` is set (the three-phase path hands them to
  // the agents on every pass; the full-view engine keeps its own).
  const std::set<uint32_t>& pending() const { return pending_; }
  bool track_pending = false;
  TaskHistory& history() { return history_; }
  // The history group of an ended service task (TaskHistory::GroupKey):
  // its slot, or its node for a global service's.
  std::string HistoryGroupOf(const TaskEntry& e) const;
  static int32_t SlotOf(const TaskEntry& e);
  // Grows when a node is removed or the task positions move (a compaction,
  // a load): a placement engine's state built from them is stale.
  uint64_t layout_generation = 0;

  std::map<std::string, StoredNode, std::less<>> nodes;  // by id
  // Nodes added or updated since the last call, by id (a removed node makes
  // every task visited and moves layout_generation instead).
  std::vector<std::string> TakeChangedNodes() { return std::exchange(changed_nodes_, {}); }
  // Whether a node joined (was added ready and active, or became so) since
  // the last call; not on a load (berthd starting).
  bool TakeNodesJoined() { return std::exchange(nodes_joined_, false); }
  // Whether `id` is a stored node: a hash lookup, since a pass asks it for
  // every task.
  bool HasNode(const std::string& id) const { return node_ids_.contains(id); }
  // When each slot (or global service's node), by history group, was
  // restarted by the restart policy, oldest first. In memory only: a
  // restarted berthd counts max_attempts afresh, as a new SwarmKit leader's
  // restart supervisor does.
  std::deque<Timestamp>& RestartsOf(const std::string& group) { return restarts_[group]; }
  // Since when `node` has been seen not ready (down, unknown, disconnected)
  // by a pass: `now` the first time it asks. In memory only: a restarted
  // berthd gives every node a fresh grace period, as a new SwarmKit leader.
  Timestamp NotReadySince(const std::string& node, Timestamp now) {
    return not_ready_since_.try_emplace(node, now).first->second;
  }
  // W of fair-share admission: the slots of the ready, active nodes (kept
  // as nodes change).
  int64_t Workers() const { return workers_; }
  // By id; a pass looks a service up for each task, so a hash map.
  std::unordered_map<std::string, StoredService> services;
  TaskEntries tasks;
  std::unordered_map<std::string, size_t> task_index;  // id -> tasks[i]
  std::map<std::string, StoredJob, std::less<>> jobs;
  std::map<std::string, Recorded, std::less<>> durations;  // by task name
  // The admission status a pass last stored (Pass::ExplainAdmission).
  std::string admission_status;
  // Rollouts by service id; kept while the service exists.
  std::map<std::string, ServiceUpdate> updates;
  // Services with "rebalance": "on-join" to look at since a node joined
  // (Pass::RebalanceOnJoin keeps those whose rollout is under way).
  std::set<std::string> rebalance_due;

 private:
  Status Load(store::WatchedStore& store);
  Status Apply(const store::Change& change);
  void ApplyService(const std::string& id, std::optional<api::Json> json);
  void ApplyJob(const std::string& id, std::optional<api::Json> json, int64_t revision);
  void ApplyUpdateStatus(const std::string& id, const std::optional<api::Json>& json,
                         const std::string& text);
  void PutTask(const std::string& id, const api::Json& body, int64_t revision);
  // Deletes tasks[i], leaving a free entry; `in_history`: its history
  // group may still hold it.
  void EraseTask(size_t i, bool in_history = true);
  void Queue(uint32_t position);
  // Queues a job's tasks ("<job>.<n>", n <= its task count).
  void QueueJobTasks(const std::string& job, int64_t tasks);
  void Compact();
  // `e` leaves every count (Recount's inverse).
  void Uncount(TaskEntry& e);
  static int64_t WorkersOf(const StoredNode& node);
  orchestrator::ServiceTally& TallyFor(const std::string& service);
  void MarkDirty(const std::string& service, orchestrator::ServiceTally& tally);
  void Rebuild();  // every tally, the pending set and the history, from the tasks

  // TaskEntry::tally: the flags of orchestrator::ServiceTally::Mark, and
  // kListed for an entry in pending_.
  static constexpr uint8_t kListed = 16;
  struct Timer {
    Timestamp due;
    uint32_t position;
    std::string id;
    bool operator>(const Timer& o) const { return due > o.due; }
  };

  bool loaded_ = false;
  bool visit_all_ = true;
  bool nodes_joined_ = false;
  std::vector<uint32_t> queued_;
  std::vector<std::string> changed_nodes_;
  // Known nodes whose update may concern their tasks (drained, not ready,
  // relabelled): TakeVisit queues the tasks on them.
  std::unordered_set<std::string> check_nodes_;
  std::unordered_map<std::string, Timestamp> not_ready_since_;
  std::unordered_map<std::string, std::deque<Timestamp>> restarts_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::unordered_map<std::string, orchestrator::ServiceTally> tallies_;
  std::set<std::string> dirty_services_;
  std::set<uint32_t> pending_;
  TaskHistory history_;
  size_t free_entries_ = 0;
  std::unordered_set<std::string> node_ids_;  // the keys of `nodes`
  int64_t workers_ = 0;
};

}  // namespace berth::daemon
