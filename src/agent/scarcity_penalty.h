// ScarcityPenalty: keeps scarce nodes for the tasks that need them
// (docs/threephase.md, "Plugins"). A node is scarce when it carries a
// property few tasks can do without (AgentNode::scarce: the edge labels). A
// task that asks for nothing of the kind (no edge requirements, no placement
// constraints) scores a scarce node 0 and any other node 100; a task that
// does ask scores every node 100, so its own order is unchanged.
//
// Why a score and not a filter: an unconstrained task may still use a scarce
// node when its sample holds nothing else, but with the default weight
// (AgentOptions::scarcity_weight) it never prefers one while its sample holds
// a node that is not scarce. Without it, most-allocated scoring sends
// unconstrained tasks to the small edge nodes first (they look fullest) and
// the edge tasks find no room (docs/benchmarks.md).
#pragma once

#include "agent/node_plugin.h"

namespace berth::agent {

// Whether `task` asks for what scarce nodes offer: edge requirements or any
// hard placement constraint (a constraint narrows the task to fewer nodes,
// so it is not asked to keep off any of them).
inline bool NeedsScarceNodes(const PlacementTask& task) {
  return task.edge.target.has_value() || task.edge.min_battery_percent > 0 ||
         task.edge.min_capacity_mah > 0 || (task.spec && !task.spec->constraints.empty());
}

class ScarcityPenalty final : public NodePlugin {
 public:
  std::string_view name() const override { return "scarcity-penalty"; }
  void SetTask(const PlacementTask& task) override { needs_scarce_ = NeedsScarceNodes(task); }
  bool Filter(const AgentNode&) const override { return true; }
  bool HasScore() const override { return true; }
  int64_t Score(const AgentNode& node) const override {
    return node.scarce && !needs_scarce_ ? 0 : 100;
  }

 private:
  bool needs_scarce_ = false;
};

}  // namespace berth::agent
