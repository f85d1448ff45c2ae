// ClusterState: the full-view engine's local state (docs/placement.md,
// "Nodes and tasks": what the engine keeps).
//
// Nodes and tasks live in contiguous arrays indexed by dense integers
// (NodeIndex, TaskIndex); string ids are interned at this boundary. Per node it
// keeps a NodeInfo (available resources, active tasks in total and per service,
// host ports); per (node, service, spec version) the times of recent failures.
// Tasks pending placement are kept in arrival order.
//
// Tracking rules (docs/placement.md, "Nodes and tasks"): a task is tracked on
// its node (holds resources and ports) while its state is pending..running and
// it is assigned there, and counts as active for spreading while it is tracked
// and its desired state is <= complete. A task that is pending with its node preset is
// preassigned: it is tracked only once the scheduler confirms it.
//
// Not thread-safe: one control loop owns it.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/id_index.h"
#include "core/node.h"
#include "core/node_info.h"
#include "core/prefault_allocator.h"
#include "core/status.h"
#include "core/task.h"
#include "core/time.h"

namespace berth::placement {

using NodeIndex = uint32_t;
using TaskIndex = uint32_t;
inline constexpr NodeIndex kNoNode = std::numeric_limits<NodeIndex>::max();

// The engine's record of one task: compact, with interned ids.
struct TaskRecord {
  std::string id;
  ServiceIndex service = 0;  // interned service id ("" for one-off tasks)
  bool has_spec_version = false;
  bool preassigned = false;  // node chosen by the orchestrator, not the scheduler
  TaskState state = TaskState::kPending;
  TaskState desired_state = TaskState::kRunning;
  NodeIndex node = kNoNode;
  uint64_t spec_version = 0;
  Timestamp updated_at;
  std::shared_ptr<const TaskSpec> spec;
  std::vector<GenericClaim> claims;  // named generic instances held on `node`
  // The capacity epoch at which the scheduler last left it pending (0: never).
  uint64_t unplaced_at_epoch = 0;
};

class ClusterState {
 public:
  // Adds a node. Errors: InvalidArgument for an empty id, Conflict for a
  // duplicate id.
  Result<NodeIndex> AddNode(Node node);
  // Replaces node `index`'s description (same id; NodeInfo::UpdateNode: what
  // its tracked tasks hold stays reserved).
  void UpdateNode(NodeIndex index, Node node) {
    nodes_[index].UpdateNode(std::move(node));
    ++capacity_epoch_;
  }

  // Adds a task in any state. A failed or rejected task with a node counts as
  // a failure at `updated_at` (unless preassigned). Errors: InvalidArgument for
  // an empty id or a missing spec, Conflict for a duplicate id, NotFound for a
  // node id that is not known.
  Result<TaskIndex> AddTask(const Task& task, bool preassigned = false);

  // Moves a task to `state` at time `at`, updating its node's accounting and
  // recording a failure when it becomes failed or rejected.
  Status SetTaskState(TaskIndex task, TaskState state, Timestamp at);

  // The scheduler's decision: the pending task now runs on `node` (state
  // assigned, tracked, active).
  void Assign(TaskIndex task, NodeIndex node, Timestamp at);

  // Drops a task the engine need not see any more (it ended, or left the
  // caller's view): its reservations are released, its id is free again,
  // and its record stays as an empty slot (state remove) so indices do not
  // move. Failures it recorded stay. For a long-lived state; compact it by
  // loading a new one when forgotten_count() grows large.
  void ForgetTask(TaskIndex task);
  size_t forgotten_count() const { return forgotten_; }

  // The nodes as they would be without the tasks of `service` on the nodes
  // that take tasks (ready and active; a paused, drained or unreachable node
  // keeps the ones it holds): the same nodes, every other tracked task
  // still holding its resources, ports and counts, but no task records and
  // no failures. For asking where a pass would place the service afresh
  // (rebalancing: placement/rebalance_target.h). Its
  // tie-break ranks (rule 4 of the node order) put the nodes holding more
  // of the service's tasks now first, then follow Ranks(seed): of two
  // equally good placements, the pass picks the one that moves fewer
  // tasks. Costs a copy of the nodes and one scan of the records, not a
  // copy of them.
  ClusterState WithoutTasksOf(ServiceIndex service, std::optional<uint64_t> seed) const;

  // Grows whenever any node's capacity or counts may have changed: a node
  // added or updated, a task tracked or untracked on one. The scheduler
  // compares it with TaskRecord::unplaced_at_epoch.
  uint64_t capacity_epoch() const { return capacity_epoch_; }
  void MarkUnplaced(TaskIndex task) { tasks_[task].unplaced_at_epoch = capacity_epoch_; }

  size_t node_count() const { return nodes_.size(); }
  size_t task_count() const { return tasks_.size(); }
  // Makes room for `count` task records in all, rounded up to a power of
  // two (AddTask then does not grow the arrays step by step, and the next
  // few do not copy them all again).
  void ReserveTasks(size_t count);
  const NodeInfo& node(NodeIndex i) const { return nodes_[i]; }
  const TaskRecord& task(TaskIndex i) const { return tasks_[i]; }
  std::optional<NodeIndex> FindNode(std::string_view id) const;
  std::optional<TaskIndex> FindTask(std::string_view id) const;
  ServiceIndex InternService(std::string_view service_id);
  // The index of a service some task was added with; absent otherwise.
  std::optional<ServiceIndex> FindService(std::string_view service_id) const;
  // node(i).active_tasks(), held contiguously so a scan over every node's
  // order key stays in cache.
  uint32_t ActiveTasksOn(NodeIndex node) const { return node_active_[node]; }
  // Active tasks of `service` on all nodes together (sum of
  // NodeInfo::ActiveTasksOf).
  uint32_t ActiveTasksOfService(ServiceIndex service) const {
    return service < active_by_service_.size() ? active_by_service_[service] : 0;
  }

  // Tasks in state pending (desired state <= complete), in arrival order.
  // Costs what became pending since the last call plus what still is, not
  // a visit of every task (a list of candidates is kept and pruned here).
  std::vector<TaskIndex> PendingTasks();

  // The tie-break rank of each node (rule 4 of the node order): by default the
  // position of its id in byte order; with a seed, a seeded shuffle. Recomputed
  // when nodes were added since the last call.
  const std::vector<uint32_t>& Ranks(std::optional<uint64_t> seed);

  // Failures of (service, version) on `node` at or after `since`.
  uint32_t RecentFailures(NodeIndex node, ServiceIndex service, uint64_t version,
                          Timestamp since) const;
  // Nodes with any failure of (service, version), for callers that want to
  // visit only those.
  std::vector<NodeIndex> NodesWithFailures(ServiceIndex service, uint64_t version) const;

 private:
  void Track(TaskRecord& t);
  void Untrack(const TaskRecord& t);  // the caller clears t.claims if it keeps t
  void RecordFailure(const TaskRecord& t, Timestamp at);
  static bool IsTracked(const TaskRecord& t);
  static bool IsActive(const TaskRecord& t);
  static bool IsPending(const TaskRecord& t) {
    return t.state == TaskState::kPending && t.desired_state <= TaskState::kComplete;
  }
  auto NodeIdOf() const {
    return [this](uint32_t i) { return std::string_view(nodes_[i].node().id); };
  }
  auto TaskIdOf() const {
    return [this](uint32_t i) { return std::string_view(tasks_[i].id); };
  }

  std::vector<NodeInfo> nodes_;
  std::vector<TaskRecord, PrefaultAllocator<TaskRecord>> tasks_;  // core/prefault_allocator.h
  IdIndex node_by_id_;
  IdIndex task_by_id_;
  std::unordered_map<std::string, ServiceIndex> service_by_id_;
  std::vector<uint32_t> active_by_service_;  // by ServiceIndex
  std::vector<uint32_t> node_active_;        // by NodeIndex
  std::vector<uint32_t> ranks_;
  std::optional<uint64_t> ranks_seed_;
  size_t forgotten_ = 0;
  uint64_t capacity_epoch_ = 1;
  // Every task that became pending since the last PendingTasks(), and those
  // still pending then; may hold duplicates and tasks no longer pending.
  std::vector<TaskIndex> pending_candidates_;
  // Failure times per (service, version), then per node.
  struct FailureKey {
    ServiceIndex service;
    uint64_t version;
    bool operator==(const FailureKey&) const = default;
  };
  struct FailureKeyHash {
    size_t operator()(const FailureKey& k) const { return k.version * 1000003u ^ k.service; }
  };
  std::unordered_map<FailureKey, std::unordered_map<NodeIndex, std::vector<Timestamp>>,
                     FailureKeyHash>
      failures_;
};

}  // namespace berth::placement
