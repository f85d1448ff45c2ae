// RebalanceTarget: where one pass of the engine would put a service's tasks
// if they were all placed afresh now (docs/placement.md, "Rebalancing").
//
//   kept      = the service's tasks on nodes that take no tasks (not ready
//               and active: paused, drained, unreachable)
//   target(n) = its tasks there, on such a node n; otherwise the tasks of
//               a Scheduler pass over state.WithoutTasksOf(service) that
//               places replicas - kept new tasks of `spec`, on node n
//
// The pass sees every other task where it is (resources, ports, counts), the
// service's preferences, constraints and affinities, and the options'
// strategy and seed; its tie-break ranks put the nodes holding more of the
// service's tasks now first (ClusterState::WithoutTasksOf), so of two
// equally good placements it keeps the one that moves fewer tasks. Tasks
// the pass cannot place count nowhere: the targets may sum to less than
// `replicas`.
//
// Costs a copy of the nodes, one scan of the task records and one pass
// over `replicas` tasks; `state` is not changed. Pure apart from that;
// same thread rules as the ClusterState it reads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/task.h"
#include "core/time.h"
#include "placement/cluster_state.h"
#include "placement/scheduler.h"

namespace berth::placement {

// By NodeIndex of `state`; `service` is the interned id of `service_id`.
std::vector<uint32_t> RebalanceTarget(const ClusterState& state, ServiceIndex service,
                                      const std::string& service_id,
                                      const std::shared_ptr<const TaskSpec>& spec, uint64_t version,
                                      uint64_t replicas, const SchedulerOptions& options,
                                      Timestamp now);

}  // namespace berth::placement
