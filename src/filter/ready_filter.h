// Filter 1: the node is ready and its availability is active.
#pragma once

#include "filter/filter.h"

namespace berth::filter {

class ReadyFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec&, ServiceIndex) override { return true; }
  bool Check(const NodeInfo& node) const override { return node.ReadyForTasks(); }
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "", " not available for new tasks");
  }
};

}  // namespace berth::filter
