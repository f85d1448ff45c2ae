#include "placement/rebalance_target.h"

#include <string>

namespace berth::placement {

std::vector<uint32_t> RebalanceTarget(const ClusterState& state, ServiceIndex service,
                                      const std::string& service_id,
                                      const std::shared_ptr<const TaskSpec>& spec, uint64_t version,
                                      uint64_t replicas, const SchedulerOptions& options,
                                      Timestamp now) {
  ClusterState afresh = state.WithoutTasksOf(service, options.tie_break_seed);
  afresh.ReserveTasks(replicas);
  for (uint64_t k = 1; k <= replicas; ++k)
    (void)afresh.AddTask(Task{service_id + "." + std::to_string(k), service_id, version,
                              TaskState::kPending, TaskState::kRunning, "", Timestamp{}, spec});
  Scheduler scheduler(afresh, options);
  std::vector<uint32_t> target(afresh.node_count(), 0);
  for (const Decision& d : scheduler.SchedulePending(now).decisions)
    if (d.node != kNoNode) ++target[d.node];
  return target;
}

}  // namespace berth::placement
