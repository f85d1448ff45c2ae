// BatteryLevel: edge nodes on battery (docs/threephase.md, "Plugins"). Node
// labels battery-level (percent) and battery-capacity (mAh); the task's
// minimum level and capacity. A node without a battery-level label is mains powered:
// it passes with score 100. Otherwise it passes when both minimums hold,
// and scores its level (fuller batteries first).
#pragma once

#include <algorithm>

#include "agent/node_plugin.h"

namespace berth::agent {

class BatteryLevel final : public NodePlugin {
 public:
  std::string_view name() const override { return "battery-level"; }
  void SetTask(const PlacementTask& task) override { edge_ = &task.edge; }
  bool Filter(const AgentNode& node) const override {
    if (!node.battery_percent) return true;
    return *node.battery_percent >= edge_->min_battery_percent &&
           node.battery_capacity_mah >= edge_->min_capacity_mah;
  }
  bool HasScore() const override { return true; }
  int64_t Score(const AgentNode& node) const override {
    return node.battery_percent ? std::clamp<int64_t>(*node.battery_percent, 0, 100) : 100;
  }

 private:
  const EdgeRequirements* edge_ = nullptr;
};

}  // namespace berth::agent
