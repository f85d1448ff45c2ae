// The `berth plan` placement document (docs/plan.md, "Placement
// documents"): decoding into engine inputs, and encoding the engine's
// decisions as the plan output.
//
// Decoding is strict: an unknown field or an invalid value is an
// InvalidArgument error whose message starts with the field's path, e.g.
// `nodes[0]: unknown field 'colour'` or
// `services[0].task.resources.memory: invalid memory quantity '8Gx' (...)`.
// Services are expanded here by the orchestrator's rules, from the same
// per-service tally berthd keeps (orchestrator/orchestrator.h and
// service_tally.h: the document's tasks are counted as berthd counts the
// tasks it holds, and the tally answers both): every task of a service
// shares one TaskSpec, missing replicas become pending tasks
// `<service>.<n>`, and a global service gets a preassigned pending task
// `<service>.<node>` on each node without one (docs/plan.md has every rule).
// Pure functions; safe to call from any thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/node.h"
#include "core/status.h"
#include "core/task.h"
#include "core/time.h"
#include "placement/cluster_state.h"
#include "placement/scheduler.h"

namespace berth::api {

// The most replicas one service may ask for: a bound on the tasks a single
// document or API request can make the orchestrator create.
inline constexpr uint64_t kMaxReplicas = 1'000'000;

// One task for the engine: pass both fields to ClusterState::AddTask.
struct PlannedTask {
  Task task;
  // True for every task of a global service, and for a pending task listed
  // with a node (its node was chosen before scheduling).
  bool preassigned = false;
};

// Everything a placement document describes, ready to load into a
// placement::ClusterState: AddNode for each node, then AddTask for each task,
// in order.
struct PlacementPlanInput {
  Timestamp now;                   // the document's "now", or the caller's default
  std::vector<Node> nodes;         // document order
  std::vector<PlannedTask> tasks;  // listed tasks in document order, then generated ones
};

// Decodes a parsed placement document (see api/document.h for the text).
// A document with "workers" or "classes" is an admission document, which is
// not supported yet (an error says so).
Result<PlacementPlanInput> DecodePlacementDocument(const nlohmann::json& doc,
                                                   Timestamp default_now);

// Why a pending task is not handed to the engine at all, or "" when it is:
// `not scheduled: desired state is <state>` when its desired state is beyond
// complete.
std::string NotScheduledReason(const Task& task);

// The plan output: {"assignments": [{"task", "node"[, "generic_resources"]}],
// "pending": [{"task", "reason"}]}. Assignments are in the order the engine
// made them, with "generic_resources" {kind: [names]} only when the task took
// named generic instances. Pending entries follow the input's task order.
// Every pending task of `input` appears exactly once in one of the lists.
// `state` is the ClusterState `input` was loaded into and `result` its pass.
// Keys keep this order (ordered_json), so the output reads like the spec.
nlohmann::ordered_json EncodePlacementResult(const PlacementPlanInput& input,
                                             const placement::ClusterState& state,
                                             const placement::PassResult& result);

// One pass of the full-view engine over a placement document: decode, load
// a fresh ClusterState, SchedulePending at the document's "now" (or
// `default_now`), encode. `berth plan` and berthd's control loop both run
// exactly this, with its options (seed, strategy).
struct PlacementPlan {
  PlacementPlanInput input;       // including the tasks generated for services
  nlohmann::ordered_json output;  // EncodePlacementResult's
};
Result<PlacementPlan> PlanPlacement(const nlohmann::json& doc, Timestamp default_now,
                                    const placement::SchedulerOptions& options = {});

}  // namespace berth::api
