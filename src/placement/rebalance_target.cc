#include "placement/rebalance_target.h"

#include <string>

namespace berth::placement {

std::vector<uint32_t> RebalanceTarget(const ClusterState& state, ServiceIndex service,
                                      const std::string& service_id,
                                      const std::shared_ptr<const TaskSpec>& spec, uint64_t version,
                                      uint64_t replicas, const SchedulerOptions& options,
                                      Timestamp now) {
  ClusterState afresh = state.WithoutTasksOf(service, options.tie_break_seed);
  std::vector<uint32_t> target(afresh.node_count(), 0);
  uint64_t kept = 0;  // on nodes that take no tasks: they stay where they are
  for (NodeIndex n = 0; n < state.node_count(); ++n)
    if (!state.node(n).ReadyForTasks()) {
      target[n] = state.node(n).ActiveTasksOf(service);
      kept += target[n];
    }
  const uint64_t fresh = replicas > kept ? replicas - kept : 0;
  afresh.ReserveTasks(fresh);
  for (uint64_t k = 1; k <= fresh; ++k)
    (void)afresh.AddTask(Task{service_id + "." + std::to_string(k), service_id, version,
                              TaskState::kPending, TaskState::kRunning, "", Timestamp{}, spec});
  Scheduler scheduler(afresh, options);
  for (const Decision& d : scheduler.SchedulePending(now).decisions)
    if (d.node != kNoNode) ++target[d.node];
  return target;
}

}  // namespace berth::placement
