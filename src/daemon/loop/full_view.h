// FullView: berthd's full-view placement path (no agents) over one
// placement::ClusterState that lives across passes, instead of a placement
// document built from every node and task on each pass.
//
// Each pass calls Sync and then Schedule:
//  - Sync loads the nodes again (a fresh ClusterState) only when a node was
//    removed or the task positions moved (StoredState::layout_generation),
//    or when forgotten task records outnumber the live ones, and then looks
//    at every task; otherwise it keeps the engine's state, adds or updates
//    the nodes the pass names as changed, and looks only at the tasks the
//    pass names (those it visited or touched), bringing each in line with
//    its stored entry (`planned`: whether the engine sees it): a new one is added, a
//    changed one moves to its new state (an ended one first records its failure, then is
//    forgotten), one that left the pass's view is forgotten. Failures come from ended tasks, as a
//    placement document's do, so berthd and `berth plan` judge nodes on the
//    same history.
//  - Schedule runs placement::Scheduler over the pending tasks, in arrival
//    order (the order the entries were first handed over).
// Decisions name engine indices; EntryOf and NodeId map them back.
//
// Not thread-safe: the control loop's thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/histogram.h"
#include "core/status.h"
#include "core/task.h"
#include "core/time.h"
#include "daemon/loop/stored_state.h"
#include "placement/cluster_state.h"
#include "placement/scheduler.h"

namespace berth::daemon {

class FullView {
 public:
  using Planned = std::function<bool(const TaskEntry&)>;
  using SpecOf = std::function<std::shared_ptr<const TaskSpec>(const TaskEntry&)>;

  explicit FullView(placement::SchedulerOptions options = {}) : options_(options) {}

  // Brings the engine in line with `state`'s nodes and with the entries at
  // `positions` in `state.tasks()` (every entry after a reload): those
  // `planned` accepts are in the engine in their stored state, no other is
  // (ended ones only left their failures). Entries not named must not have
  // changed since the last Sync. `global(e)` says whether a task belongs to
  // a global service (preassigned to its node).
  // Internal: a stored node or task the engine refuses (the store holds
  // what the API validated, so this is a bug or a hand-edited store).
  Status Sync(StoredState& state, const std::vector<std::string>& changed_nodes,
              const std::vector<uint32_t>& positions, const Planned& planned, const SpecOf& spec_of,
              const std::function<bool(const TaskEntry&)>& global);
  placement::PassResult Schedule(Timestamp now);

  // Rebalancing (docs/placement.md, "Rebalancing"): for replicated service
  // `service`, against placement::RebalanceTarget (its `replicas` tasks of
  // `spec`, at spec version `version`, placed afresh now), by node id:
  // `from`, how many tasks a node holds beyond its target, and `to`, how
  // many it lacks; nodes at their target are left out. No more tasks leave
  // than `to` has room for (tasks the pass could not place are no reason to
  // move one). Reads the engine as of the last Sync; costs a copy of the
  // nodes and one pass.
  struct Moves {
    std::map<std::string, uint32_t> from, to;
  };
  Moves RebalanceMoves(const std::string& service, const std::shared_ptr<const TaskSpec>& spec,
                       uint64_t version, uint64_t replicas, Timestamp now) const;

  // The position in StoredState::tasks() of the task at engine index `task`
  // (as of the last Sync).
  size_t EntryOf(placement::TaskIndex task) const { return entry_of_[task]; }
  const std::string& NodeId(placement::NodeIndex node) const { return state_.node(node).node().id; }
  // How many times the nodes were loaded (for tests and metrics).
  uint64_t loads() const { return generation_; }
  // The engine's time on each group it scheduled (PassResult::group_durations).
  // Safe to read from any thread.
  const Histogram& group_durations() const { return group_durations_; }

 private:
  Status Load(StoredState& state);
  // Adds or updates the engine's record of stored node `id`.
  Status PutNode(const StoredState& state, const std::string& id);
  Status SyncEntry(TaskEntry& e, size_t position, const Planned& planned, const SpecOf& spec_of,
                   const std::function<bool(const TaskEntry&)>& global);
  Status Add(TaskEntry& e, size_t position, const SpecOf& spec_of, bool global);
  void Forget(TaskEntry& e);
  // Whether the engine's record still describes `e` apart from its state.
  bool SameTask(const TaskEntry& e, const placement::TaskRecord& record) const;

  placement::SchedulerOptions options_;
  placement::ClusterState state_;
  uint64_t generation_ = 0;         // of state_; entries carry the one they were synced in
  uint64_t layout_generation_ = 0;  // StoredState::layout_generation state_ was loaded from
  std::vector<size_t> entry_of_;    // by engine task index
  Histogram group_durations_;
};

}  // namespace berth::daemon
