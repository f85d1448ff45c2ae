// GeoLocation: keep a task near its target (docs/threephase.md, "Plugins").
// A node's label geo-location = "lat,long"; the task's target and max
// distance (default 10 km). Filter: d <= max; score: ceil(100 - 99 * d / max), with d
// the great-circle distance on a sphere of radius 6371 km. A task without a
// target passes every node with score 100; a node without a (valid) label
// fails a task that has one.
#pragma once

#include "agent/node_plugin.h"

namespace berth::agent {

// Great-circle distance in metres (haversine, earth radius 6371 km).
double DistanceMeters(const GeoPoint& a, const GeoPoint& b);

class GeoLocation final : public NodePlugin {
 public:
  std::string_view name() const override { return "geo-location"; }
  void SetTask(const PlacementTask& task) override { edge_ = &task.edge; }
  bool Filter(const AgentNode& node) const override;
  bool HasScore() const override { return true; }
  int64_t Score(const AgentNode& node) const override;

 private:
  const EdgeRequirements* edge_ = nullptr;
};

}  // namespace berth::agent
