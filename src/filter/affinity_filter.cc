#include "filter/affinity_filter.h"

namespace berth::filter {

void AffinityFilter::Resolve(const TaskSpec& spec, const ServiceLookup& lookup) {
  rules_.clear();
  can_judge_ = static_cast<bool>(lookup);
  for (const ServiceAffinity& a : spec.affinities)
    if (!a.soft) rules_.push_back({can_judge_ ? lookup(a.service) : std::nullopt, a.anti});
}

bool AffinityFilter::SetTask(const TaskSpec&, ServiceIndex) { return !rules_.empty(); }

bool AffinityFilter::Check(const NodeInfo& node) const {
  if (!can_judge_) return false;
  for (const Rule& rule : rules_) {
    const bool holds = rule.service && node.ActiveTasksOf(*rule.service) > 0;
    if (holds == rule.anti) return false;
  }
  return true;
}

std::string AffinityFilter::Explain(int nodes) const {
  return CountNodes(nodes, "affinity not satisfied on ", "");
}

}  // namespace berth::filter
