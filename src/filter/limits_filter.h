// The limits filter, after platform (filter 5), Berth's own: a task with resource limits (its
// template's `limits`, cpu, memory or pids) goes only to a node that enforces them, so that it
// never runs unconstrained. A node that reports whether it does (a berth-node:
// Node::limits_enforced, and pids_limit_enforced for a pids limit, which
// needs the pids controller besides, from what it found as it joined,
// docs/agent.md "Resource limits") passes when it does. A node that reports nothing
// (berthd's simulated nodes, plan documents without the field) passes:
// its tasks are simulated, and there is nothing to limit.
#pragma once

#include "filter/filter.h"

namespace berth::filter {

class LimitsFilter final : public Filter {
 public:
  // Takes part only for a task with limits.
  bool SetTask(const TaskSpec& spec, ServiceIndex) override {
    pids_ = spec.has_pids_limit;
    return spec.has_limits;
  }
  bool Check(const NodeInfo& node) const override {
    const bool enforced = node.node().limits_enforced.value_or(true);
    return enforced && (!pids_ || node.node().pids_limit_enforced.value_or(enforced));
  }
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "limits not enforceable on ", "");
  }

 private:
  bool pids_ = false;  // the task has a pids limit
};

}  // namespace berth::filter
