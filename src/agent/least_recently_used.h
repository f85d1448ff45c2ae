// LeastRecentlyUsed: prefer nodes that received a task longest ago
// (docs/threephase.md, "Plugins"). Score: 100 for a node never bound, else the
// seconds since its last binding, capped at 100. No filter.
#pragma once

#include <algorithm>

#include "agent/node_plugin.h"
#include "core/time.h"

namespace berth::agent {

class LeastRecentlyUsed final : public NodePlugin {
 public:
  explicit LeastRecentlyUsed(const Clock& clock) : clock_(clock) {}
  std::string_view name() const override { return "least-recently-used"; }
  void SetTask(const PlacementTask&) override { now_ = clock_.Now(); }
  bool Filter(const AgentNode&) const override { return true; }
  bool HasScore() const override { return true; }
  int64_t Score(const AgentNode& node) const override {
    if (node.bound_tasks == 0) return 100;
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now_ - node.last_bound);
    return std::clamp<int64_t>(seconds.count(), 0, 100);
  }

 private:
  const Clock& clock_;
  Timestamp now_;
};

}  // namespace berth::agent
