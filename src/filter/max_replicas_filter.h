// Filter 7: the node runs fewer active tasks of the service than the task's
// max-replicas-per-node limit (counting tasks placed earlier in the same batch,
// since the engine updates the node as it goes). The text is SwarmKit's, for
// any number of nodes.
#pragma once

#include "filter/filter.h"

namespace berth::filter {

class MaxReplicasFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec& spec, ServiceIndex service) override {
    limit_ = spec.max_replicas_per_node;
    service_ = service;
    return limit_ > 0;
  }
  bool Check(const NodeInfo& node) const override { return node.ActiveTasksOf(service_) < limit_; }
  std::string Explain(int) const override { return "max replicas per node limit exceed"; }

 private:
  uint64_t limit_ = 0;
  ServiceIndex service_ = 0;
};

}  // namespace berth::filter
