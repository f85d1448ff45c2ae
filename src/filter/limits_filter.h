// The limits filter, after platform (filter 5), Berth's own: a task with resource limits (its
// template's `limits`, cpu or memory) goes only to a node that enforces them, so that it never runs
// unconstrained. A node that reports whether it does (a berth-node:
// Node::limits_enforced, from what it found as it joined, docs/agent.md
// "Resource limits") passes when it does. A node that reports nothing
// (berthd's simulated nodes, plan documents without the field) passes:
// its tasks are simulated, and there is nothing to limit.
#pragma once

#include "filter/filter.h"

namespace berth::filter {

class LimitsFilter final : public Filter {
 public:
  // Takes part only for a task with limits.
  bool SetTask(const TaskSpec& spec, ServiceIndex) override { return spec.has_limits; }
  bool Check(const NodeInfo& node) const override {
    return node.node().limits_enforced.value_or(true);
  }
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "limits not enforceable on ", "");
  }
};

}  // namespace berth::filter
