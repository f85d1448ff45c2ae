// The messages between scheduler instances and cluster agents
// (docs/threephase.md): sampling and commit requests and their answers.
//
// Plain values with string ids at the boundary and integer resources, so an
// HTTP codec can carry them unchanged when agents run in their own
// processes. The task's spec is shared (immutable) between the messages of
// one task.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/task.h"
#include "core/time.h"
#include "executor/process_spec.h"

namespace berth::agent {

// A point on earth in micro-degrees (integers, like every Berth quantity).
struct GeoPoint {
  int64_t lat_micro = 0;
  int64_t lon_micro = 0;
  friend bool operator==(const GeoPoint&, const GeoPoint&) = default;
};

// What a task asks of edge nodes, beyond TaskSpec.
struct EdgeRequirements {
  std::optional<GeoPoint> target;   // absent: every node passes with score 100
  int64_t max_distance_m = 10'000;  // geo filter radius (default 10 km)
  int64_t min_battery_percent = 0;  // battery filter; 0: no minimum
  int64_t min_capacity_mah = 0;
};

// A task as the three-phase path places it.
struct PlacementTask {
  std::string id;
  int64_t priority = 0;                  // higher is sampled first
  std::shared_ptr<const TaskSpec> spec;  // never null
  EdgeRequirements edge;
  // A global service's task is pinned to one node: the scheduler asks only
  // `pinned_agent`, about only `pinned_node` (SampleRequest::node_id). Empty:
  // any node. Scheduler-side; the wire format carries the request's node.
  std::string pinned_agent, pinned_node;
  // What a berth-node machine behind the agent runs for the task (an agent
  // that fronts berth-nodes, docs/agent.md), under `run_id` (a job task's
  // later run is "<id>~<attempt>"; empty: the id). Null: nothing runs (the
  // task has no command, or the agent's nodes are simulated).
  std::shared_ptr<const executor::ProcessSpec> process = nullptr;
  std::string run_id = {};
  const std::string& run() const { return run_id.empty() ? id : run_id; }
};

// Phase 1: "give me up to `count` eligible nodes".
struct SampleRequest {
  PlacementTask task;
  // Np in basis points of the agent's nodes: the agent answers with up to
  // max(floor(basis_points * nodes / 10000), 1) nodes.
  int64_t basis_points = 400;
  Duration budget = Duration{50};  // time the agent may spend looking
  // Set: look at this node only (a pinned task); the answer is that node or
  // nothing, with the reason.
  std::string node_id;
};

// One eligible node and what the decision phase needs to know about it.
struct NodeSample {
  std::string agent_id;
  std::string node_id;
  uint32_t agent_slot = 0;     // the scheduler's own index of the agent (set on receipt)
  uint32_t node_index = 0;     // the agent's dense index, for the commit
  int64_t score_sum = 0;       // sum over agent plugins of weight * score
  int64_t weight_sum = 0;      // sum of those weights
  int64_t free_milli_cpu = 0;  // free amounts when sampled (may be stale)
  int64_t free_memory_bytes = 0;
  int64_t total_milli_cpu = 0;
  int64_t total_memory_bytes = 0;
  // The node's value of the label the task's first spread preference names
  // (SpreadLabel); empty when the task has none or the node lacks the label.
  std::string spread_value;
};

// The label key of `spec`'s first preference when it spreads over node
// labels (`spread=node.labels.<key>`), else "": the one level the decision
// pipeline honours (docs/threephase.md, "Spread preferences").
std::string_view SpreadLabel(const TaskSpec& spec);

struct SampleResponse {
  std::vector<NodeSample> nodes;  // empty: no eligible node
  uint32_t looked_at = 0;         // nodes the strategy proposed
  std::string reason;             // why a one-node request's node did not pass
};

// Phase 3: "bind this task to this node".
struct CommitRequest {
  PlacementTask task;
  uint32_t node_index = 0;  // the sample's index: a hint
  std::string node_id;      // decides when the index names another node
};

// Conflict (the node no longer fits) is distinct from an error (a bad
// request, an unknown node, an agent shutting down).
enum class CommitOutcome { kBound, kConflict, kError };

struct CommitResponse {
  CommitOutcome outcome = CommitOutcome::kError;
  std::string reason;  // why, for a conflict or an error
};

// What an agent that fronts berth-node machines tells berthd of the runs
// it assigned (docs/agent.md, "The agent's node fleet"): each run's latest
// state as its node reported it, or "failed" when the node went down.
struct RunReport {
  std::string run;   // the run id (PlacementTask::run)
  std::string node;  // where it runs
  TaskState state = TaskState::kRunning;  // running, complete, failed, rejected or shutdown
  std::string message;
  int64_t ran_ms = 0;
};

// The runs that changed after a sequence number of one agent instance, or
// all of them (`full`) when the asker's instance is not the agent's (the
// agent restarted).
struct RunsBatch {
  std::string instance;
  int64_t sequence = 0;  // ask for changes after this one next
  bool full = false;
  uint32_t nodes = 0;  // the agent's nodes now (berthd's admission counts them as workers)
  std::vector<RunReport> runs;
};

}  // namespace berth::agent
