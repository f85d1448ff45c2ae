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
#include <span>
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
#include "daemon/loop/counts.h"
#include "daemon/loop/rollouts.h"
#include "daemon/loop/stopping_copies.h"
#include "daemon/loop/stored_task.h"
#include "daemon/loop/task_entry.h"
#include "daemon/loop/task_history.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/restart_policy.h"
#include "orchestrator/service_tally.h"
#include "orchestrator/template_versions.h"
#include "orchestrator/update_config.h"
#include "store/watched_store.h"

namespace berth::daemon {

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
  // The versions whose tasks run the current template (a rebalance makes a
  // version without a new one, a rollback returns to older versions' one:
  // api::TemplateVersions).
  orchestrator::TemplateVersions templates;
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

  // Whether a task of `version` runs the current template.
  bool RunsCurrent(std::optional<uint64_t> version) const {
    return templates.RunsCurrent(version.value_or(0));
  }
  // Whether a task of `version` runs previous_spec (not the current template).
  bool RunsPrevious(std::optional<uint64_t> version) const {
    return !RunsCurrent(version) && previous_spec != nullptr;
  }
};

struct StoredJob {
  std::string requestor;  // its fair-share class's member
  int64_t tasks = 0;      // its tasks are "<job>.1" .. "<job>.<tasks>"
  int64_t revision = 0;   // admission takes jobs in this (arrival) order
  bool killed = false;
  // Its tasks' template (the job's "task"); null if it does not decode.
  std::shared_ptr<const TaskSpec> spec;
  // How a berth-node runs its tasks (the template's command), before
  // `{{.Index}}` is expanded for each task (`indexed`: it has one); null:
  // no command, its tasks are simulated.
  std::shared_ptr<const executor::ProcessSpec> process;
  bool indexed = false;
  // Each task's program and arguments, by index - 1, when the job has
  // per-task "commands" (then `process` is what its tasks share); else null.
  std::shared_ptr<const std::vector<std::vector<std::string>>> commands;
  int64_t max_retries = 0;  // a failed task waits again this many times
  // The submission that stored it, which names its parts (job_parts.h); ""
  // for a job stored with a record per task.
  std::string submission;
};

// When each slot (or global service's node), by history group, was
// restarted by the restart policy, oldest first. In memory only: a
// restarted berthd counts max_attempts afresh, as a new SwarmKit leader's
// restart supervisor does.
class RestartAttempts {
 public:
  std::deque<Timestamp>& Of(const std::string& group) { return by_group_[group]; }

 private:
  std::unordered_map<std::string, std::deque<Timestamp>> by_group_;
};

// Since when each node has been seen not ready (down, unknown,
// disconnected) by a pass. In memory only: a restarted berthd gives every
// node a fresh grace period, as a new SwarmKit leader.
class NotReadyClock {
 public:
  // `now` the first time it is asked about `node` since it was ready.
  Timestamp Since(const std::string& node, Timestamp now) {
    return since_.try_emplace(node, now).first->second;
  }
  void Forget(const std::string& node) { since_.erase(node); }

 private:
  std::unordered_map<std::string, Timestamp> since_;
};

// The revisions of a pass committed in parts (StoredState::EndPass).
struct PartRevisions {
  std::vector<std::pair<uint32_t, int64_t>> tasks = {};  // (position, revision), by position
  std::vector<int64_t> durations = {};                   // in the order of the recorded names
};

class StoredState {
 public:
  using Nodes = std::map<std::string, StoredNode, std::less<>>;
  using Services = std::unordered_map<std::string, StoredService>;
  using Jobs = std::map<std::string, StoredJob, std::less<>>;

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
  int64_t revision() const { return revision_; }
  // The pass that touched `touched` (positions) and recorded durations
  // under `recorded` (names) ends: if it committed at `revision` (0: it
  // wrote nothing), its changed entries and durations take the revision and
  // the entries are visited again by the next pass, its ended ones join
  // their history group, its pruned ones are deleted.
  // A pass committed in parts (`parts` not empty): each written task and
  // duration takes its own part's revision instead, and ended tasks join
  // their history at it, as Rebuild orders them.
  void EndPass(const std::vector<uint32_t>& touched, const std::vector<std::string>& recorded,
               int64_t revision, const PartRevisions& parts = {});

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

  // Tasks, by position (stable; a free entry has an empty id).
  std::span<TaskEntry> tasks() { return {tasks_.data(), tasks_.size()}; }
  std::span<const TaskEntry> tasks() const { return {tasks_.data(), tasks_.size()}; }
  TaskEntry& task(uint32_t position) { return tasks_[position]; }
  const TaskEntry& task(uint32_t position) const { return tasks_[position]; }
  // The entry of stored task `id`, or null.
  TaskEntry* FindTask(std::string_view id);
  // The entry for a new task `id`: its stored one if it has one (written
  // behind berthd's back), else a new entry (not stored yet).
  TaskEntry& EntryFor(std::string id);
  // Room for `count` entries in all, so that a large service does not move
  // the entries (and rehash their index) a dozen times.
  void ReserveTasks(size_t count);
  uint32_t PositionOf(const TaskEntry& e) const {
    return static_cast<uint32_t>(&e - tasks_.data());
  }

  const orchestrator::ServiceTally* TallyOf(const std::string& service) const;
  // Services whose tally or record changed since the last call, by id.
  std::set<std::string> TakeDirtyServices();
  // Positions of the runnable pending tasks the engine sees, in order; kept
  // only when set_track_pending (the three-phase path hands them to the
  // agents on every pass; the full-view engine keeps its own).
  const std::set<uint32_t>& pending() const { return pending_; }
  void set_track_pending(bool track) { track_pending_ = track; }
  TaskHistory& history() { return history_; }
  // The history group of an ended service task (TaskHistory::GroupKey):
  // its slot, or its node for a global service's.
  std::string HistoryGroupOf(const TaskEntry& e) const;
  static int32_t SlotOf(const TaskEntry& e);
  // Grows when a node is removed or the task positions move (a compaction,
  // a load): a placement engine's state built from them is stale.
  uint64_t layout_generation() const { return layout_generation_; }

  // Nodes by id.
  const Nodes& nodes() const { return nodes_; }
  const StoredNode* FindNode(std::string_view id) const {
    const auto it = nodes_.find(id);
    return it == nodes_.end() ? nullptr : &it->second;
  }
  // Nodes added or updated since the last call, by id (a removed node makes
  // every task visited and moves layout_generation instead).
  std::vector<std::string> TakeChangedNodes() { return std::exchange(changed_nodes_, {}); }
  // Whether a node joined (was added ready and active, or became so) since
  // the last call; not on a load (berthd starting).
  bool TakeNodesJoined() { return std::exchange(nodes_joined_, false); }
  // Whether `id` is a stored node: a hash lookup, since a pass asks it for
  // every task.
  bool HasNode(const std::string& id) const { return node_ids_.contains(id); }
  // When each slot (or global service's node) was restarted, and since
  // when each node has been seen not ready (both in memory only).
  RestartAttempts& restart_attempts() { return restart_attempts_; }
  NotReadyClock& not_ready() { return not_ready_; }
  // The copies the loop stopped that a slot's next copy waits for (in
  // memory only).
  StoppingCopies& stopping_copies() { return stopping_copies_; }
  // W of fair-share admission: the slots of the ready, active nodes (kept
  // as nodes change).
  int64_t Workers() const { return workers_; }

  // Services by id (a pass looks a service up for each task: a hash map).
  const Services& services() const { return services_; }
  // The ids of the services without a replica count (kept as services
  // change, so a pass never scans every service for them).
  const std::set<std::string, std::less<>>& global_services() const { return global_services_; }
  const StoredService* FindService(const std::string& id) const {
    const auto it = services_.find(id);
    return it == services_.end() ? nullptr : &it->second;
  }
  const Jobs& jobs() const { return jobs_; }
  // Durations recorded, by task name: the one of `name` (made if absent),
  // or null when none is recorded.
  Recorded& DurationOf(const std::string& name) { return durations_[name]; }
  const Recorded* FindDuration(const std::string& name) const {
    const auto it = durations_.find(name);
    return it == durations_.end() ? nullptr : &it->second;
  }
  // The stored fair-share classes (ClassRegistry's object), or none: the
  // defaults. Kept from the change feed, so a pass never reads the store.
  const std::optional<store::StoredObject>& classes() const { return classes_; }
  // The admission status a pass last stored (steps/admission.h).
  const std::string& admission_status() const { return admission_status_; }
  void set_admission_status(std::string status) { admission_status_ = std::move(status); }
  Rollouts& rollouts() { return rollouts_; }
  const Rollouts& rollouts() const { return rollouts_; }
  // The counts the views read (counts.h) as they are now, which is the
  // store's `revision`.
  std::shared_ptr<const CountsSnapshot> PublishCounts(int64_t revision);

 private:
  Status Load(store::WatchedStore& store);
  Status Apply(const store::Change& change);
  void ApplyService(const std::string& id, std::optional<api::Json> json);
  void ApplyJob(const std::string& id, std::optional<api::Json> json, int64_t revision);
  // Entries for a new job's tasks that have no record (made from its
  // parts, revision 0), and its per-task command lines.
  void AddUnrecordedTasks(const std::string& id, const api::Json& json, StoredJob* job);
  // A killed job's tasks without a record leave (they never ran).
  void DropUnrecordedTasks(const std::string& job, int64_t tasks);
  void PutTask(const std::string& id, const api::Json& body, int64_t revision);
  // Deletes tasks[i], leaving a free entry; `in_history`: its history
  // group may still hold it.
  void EraseTask(size_t i, bool in_history = true);
  // A new entry for task `id` (not stored yet); its position.
  uint32_t NewEntry(const std::string& id);
  void Queue(uint32_t position);
  // Queues a job's tasks ("<job>.<n>", n <= its task count).
  void QueueJobTasks(const std::string& job, int64_t tasks);
  void Compact();
  // `e` leaves every count (Recount's inverse).
  void Uncount(TaskEntry& e);
  // The views' counts follow `e`'s fields.
  void CountForViews(TaskEntry& e);
  // `e` leaves the tallies and the views' counts, for good.
  void Forget(TaskEntry& e);
  static int64_t WorkersOf(const StoredNode& node);
  orchestrator::ServiceTally& TallyFor(const std::string& service);
  void MarkDirty(const std::string& service, orchestrator::ServiceTally& tally);
  void Rebuild();  // every tally, the pending set and the history, from the tasks

  int64_t revision_ = 0;
  uint64_t layout_generation_ = 0;
  bool track_pending_ = false;
  Nodes nodes_;
  Services services_;
  std::set<std::string, std::less<>> global_services_;
  TaskEntries tasks_;
  std::unordered_map<std::string, size_t> task_index_;  // id -> tasks_[i]
  Jobs jobs_;
  std::map<std::string, Recorded, std::less<>> durations_;  // by task name
  // Job parts (job_parts.h) not yet read, by id: a job's come before it.
  std::map<std::string, std::string, std::less<>> parts_;
  std::optional<store::StoredObject> classes_;
  std::string admission_status_;
  Rollouts rollouts_;
  LoopCounts counts_;

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
  NotReadyClock not_ready_;
  RestartAttempts restart_attempts_;
  StoppingCopies stopping_copies_;
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
