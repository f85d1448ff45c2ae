// Filter 8 (docs/placement.md, "Affinity"): the node holds an active task
// of every service the task has a hard affinity with, and none of every
// service it has a hard anti-affinity with. Counts include tasks placed
// earlier in the same batch (the engine updates the node as it goes), so
// an anti-affinity with the task's own service gives one task per node.
//
// Service ids are resolved once per task through Pipeline's ServiceLookup;
// a service no node has ever counted holds nothing anywhere. Without a
// lookup (berth-agent's pipelines, which do not count tasks per service)
// no node can be judged, so every node fails: a hard rule is never
// silently dropped.
#pragma once

#include <optional>
#include <vector>

#include "filter/filter.h"
#include "filter/service_lookup.h"

namespace berth::filter {

class AffinityFilter final : public Filter {
 public:
  // Resolves the spec's hard affinities; called by Pipeline before SetTask.
  void Resolve(const TaskSpec& spec, const ServiceLookup& lookup);
  bool SetTask(const TaskSpec& spec, ServiceIndex service) override;
  bool Check(const NodeInfo& node) const override;
  std::string Explain(int nodes) const override;

 private:
  struct Rule {
    std::optional<ServiceIndex> service;  // absent: no node holds it
    bool anti = false;
  };
  std::vector<Rule> rules_;
  bool can_judge_ = false;  // a lookup was given
};

}  // namespace berth::filter
