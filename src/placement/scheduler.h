// Scheduler: one scheduling pass of the full-view engine over the pending
// tasks of a ClusterState, exactly as docs/placement.md describes.
//
// A pass (1) checks preassigned tasks on their node, in arrival order, then
// (2) schedules each group of identical tasks (same service id and spec
// version) with one tree of heaps, groups in order of their first task, then
// (3) schedules tasks without a spec version one at a time, in arrival order.
// Decisions are applied to the ClusterState as they are made and returned in
// the order made. Deterministic: the same state gives the same decisions.
//
// A group whose every task an earlier pass left pending at the state's
// current capacity epoch (ClusterState::capacity_epoch: no node was added,
// updated, took or gave back a task since) is skipped: it would get the
// same verdict, since faulty nodes only sort last and never make a task
// fit. Its tasks get no decision and are counted in PassResult::unchanged,
// so a pass after a change elsewhere costs what that change needs, not a
// new search for a backlog no node can take.
//
// Not thread-safe: call from the thread that owns the ClusterState.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "placement/cluster_state.h"

namespace berth::placement {

// How a leaf orders its nodes when a task's preferences do not say
// (docs/placement.md, "Preferences beyond SwarmKit"): SwarmKit's spread, or
// binpack (least room left first), as if every task ended its preferences
// with spread=node.id or pack=node.id.
enum class PlacementStrategy : uint8_t { kSpread, kBinpack };
std::string_view ToString(PlacementStrategy strategy);
Result<PlacementStrategy> ParsePlacementStrategy(std::string_view text);

struct SchedulerOptions {
  // The leaf order of tasks whose last preference is not over node.id.
  PlacementStrategy strategy = PlacementStrategy::kSpread;
  // A node with at least this many recent failures of a service version sorts
  // last for it (rule 1 of the node order).
  uint32_t max_failures = 5;
  // How far back failures count.
  Duration failure_window = std::chrono::minutes(5);
  // Absent: ties between equal nodes go to the smaller node id. Set: ties are
  // broken by a shuffle seeded with this value.
  std::optional<uint64_t> tie_break_seed;
  // Two shortcuts that give exactly the decisions of the full scans (tests
  // check this; off only for those tests): runs of identical one-off tasks
  // share one incrementally updated heap instead of a scan per task, and a
  // one-task group of a service with no active task, no spread preference
  // and no faulty node takes the first passing node of a heap of all nodes
  // by load that the pass keeps (falling back to the scan when the first few
  // do not pass).
  bool fast_paths = true;
};

struct Decision {
  TaskIndex task;
  NodeIndex node;    // kNoNode: the task stays pending
  uint32_t message;  // index into PassResult::messages
};

struct PassResult {
  std::vector<Decision> decisions;
  // Status messages referenced by decisions; [0] and [1] are always the two
  // success messages, explanations follow.
  std::vector<std::string> messages;

  // Tasks of skipped groups (above): still pending, with the verdict the
  // earlier pass gave them.
  size_t unchanged = 0;

  // Wall time of each group the pass scheduled (step 2; in step 3, each run
  // of identical one-off tasks, or one task with preferences; skipped
  // groups left out), for berthd's metrics. Not part of the decisions.
  std::vector<std::chrono::nanoseconds> group_durations = {};

  const std::string& MessageOf(const Decision& d) const { return messages[d.message]; }
};

inline constexpr const char* kAssignedMessage = "scheduler assigned task to node";
// A task no node passes the filters for: this, then " (<explanation>)".
inline constexpr const char* kNoSuitableNodeMessage = "no suitable node";
inline constexpr const char* kConfirmedMessage =
    "scheduler confirmed task can run on preassigned node";

class Scheduler {
 public:
  Scheduler(ClusterState& state, SchedulerOptions options = {});
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Schedules every pending task once, with `now` as the current time.
  PassResult SchedulePending(Timestamp now);

 private:
  class Pass;
  ClusterState& state_;
  SchedulerOptions options_;
};

}  // namespace berth::placement
