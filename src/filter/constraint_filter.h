// Filter 4: every placement constraint of the task matches the node. The
// constraints are parsed in SetTask, once per spec (they were validated when
// submitted, so a parse failure here only disables the filter, as in SwarmKit).
#pragma once

#include <vector>

#include "constraint/constraint.h"
#include "filter/filter.h"

namespace berth::filter {

class ConstraintFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec& spec, ServiceIndex) override;
  bool Check(const NodeInfo& node) const override {
    return constraint::MatchesAll(constraints_, node.node());
  }
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "scheduling constraints not satisfied on ", "");
  }

 private:
  const TaskSpec* parsed_for_ = nullptr;  // spec whose constraints_ are loaded
  std::vector<constraint::Constraint> constraints_;
};

}  // namespace berth::filter
