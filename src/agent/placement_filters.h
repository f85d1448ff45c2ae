// PlacementFilters: the filters of docs/placement.md ("Filter pipeline":
// ready, resources, plugins, constraints, platform, host ports, max
// replicas) as one agent plugin, reusing filter::Pipeline so both engines
// decide alike. Filter only; no score.
#pragma once

#include "agent/node_plugin.h"
#include "filter/pipeline.h"

namespace berth::agent {

class PlacementFilters final : public NodePlugin {
 public:
  std::string_view name() const override { return "placement-filters"; }
  void SetTask(const PlacementTask& task) override { pipeline_.SetTask(*task.spec, 0); }
  bool Filter(const AgentNode& node) const override { return pipeline_.Process(node.info); }
  bool HasScore() const override { return false; }
  int64_t Score(const AgentNode&) const override { return 0; }
  std::string Explain() const override { return pipeline_.Explain(); }

 private:
  // Process counts failures for explanations; the counts are the
  // pipeline's own bookkeeping, not observable state of this plugin.
  mutable filter::Pipeline pipeline_;
};

}  // namespace berth::agent
