#include "filter/pipeline.h"

#include <algorithm>

#include "filter/constraint_filter.h"
#include "filter/host_port_filter.h"
#include "filter/limits_filter.h"
#include "filter/max_replicas_filter.h"
#include "filter/platform_filter.h"
#include "filter/plugin_filter.h"
#include "filter/ready_filter.h"
#include "filter/resource_filter.h"

namespace berth::filter {

Pipeline::Pipeline()
    : filters_{std::make_unique<ReadyFilter>(),    std::make_unique<ResourceFilter>(),
               std::make_unique<PluginFilter>(),   std::make_unique<ConstraintFilter>(),
               std::make_unique<PlatformFilter>(), std::make_unique<LimitsFilter>(),
               std::make_unique<HostPortFilter>(), std::make_unique<MaxReplicasFilter>(),
               std::make_unique<AffinityFilter>()},
      affinity_(static_cast<AffinityFilter*>(filters_.back().get())) {}

void Pipeline::SetTask(const TaskSpec& spec, ServiceIndex service, Scope scope,
                       const ServiceLookup& services) {
  // In filters_ order: resources, host ports, max replicas and affinity
  // depend on what else runs on the node.
  static constexpr std::array<bool, kFilterCount> kNodeOnly = {true, false, true,  true, true,
                                                               true, false, false, false};
  affinity_->Resolve(spec, services);
  enabled_count_ = 0;
  for (int i = 0; i < kFilterCount; ++i) {
    if (scope == Scope::kNodeOnly && !kNodeOnly[i]) continue;
    if (filters_[i]->SetTask(spec, service)) {
      enabled_[enabled_count_] = filters_[i].get();
      enabled_index_[enabled_count_] = i;
      ++enabled_count_;
    }
  }
  failures_.fill(0);
  any_failure_ = false;
}

bool Pipeline::Process(const NodeInfo& node) {
  for (int i = 0; i < enabled_count_; ++i) {
    if (!enabled_[i]->Check(node)) {
      ++failures_[enabled_index_[i]];
      any_failure_ = true;
      return false;
    }
  }
  if (any_failure_) {
    failures_.fill(0);
    any_failure_ = false;
  }
  return true;
}

std::string Pipeline::Explain() const {
  std::array<int, kFilterCount> order;
  for (int i = 0; i < kFilterCount; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return failures_[a] > failures_[b]; });
  std::string explanation;
  for (int i : order) {
    if (failures_[i] == 0) break;
    if (!explanation.empty()) explanation += "; ";
    explanation += filters_[i]->Explain(failures_[i]);
  }
  return explanation;
}

}  // namespace berth::filter
