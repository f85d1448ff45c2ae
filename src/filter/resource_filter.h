// Filter 2: every reservation of the task fits in what the node has available
// (equal passes). A generic kind the node lacks fails.
#pragma once

#include "filter/filter.h"

namespace berth::filter {

class ResourceFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec& spec, ServiceIndex) override {
    reservations_ = &spec.reservations;
    return !spec.reservations.empty();
  }
  bool Check(const NodeInfo& node) const override;
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "insufficient resources on ", "");
  }

 private:
  const Reservations* reservations_ = nullptr;
};

}  // namespace berth::filter
