#include "agent/resources_fit.h"

#include <algorithm>

namespace berth::agent {

int64_t AllocationScore(ResourceScoring scoring, int64_t total_cpu, int64_t free_cpu,
                        int64_t demand_cpu, int64_t total_memory, int64_t free_memory,
                        int64_t demand_memory) {
  // mean = (sum of used_r / total_r) / k; in integers with a common
  // denominator: floor(100 * sum(used_r * prod(other totals)) / (k * prod(totals))).
  __int128 numerator = 0, denominator = 1;
  int k = 0;
  auto add = [&](int64_t total, int64_t free, int64_t demand) {
    if (total <= 0) return;  // a resource of total 0 is skipped
    const __int128 used = static_cast<__int128>(total) - free + demand;
    numerator = numerator * total + used * denominator;
    denominator *= total;
    ++k;
  };
  add(total_cpu, free_cpu, demand_cpu);
  add(total_memory, free_memory, demand_memory);
  if (k == 0) return scoring == ResourceScoring::kLeastAllocated ? 100 : 0;
  __int128 percent = 100 * numerator / (denominator * k);
  percent = std::clamp<__int128>(percent, 0, 100);
  const auto allocated = static_cast<int64_t>(percent);
  return scoring == ResourceScoring::kLeastAllocated ? 100 - allocated : allocated;
}

bool ResourcesFit::Filter(const AgentNode& node) const {
  const NodeInfo& info = node.info;
  if (info.available_milli_cpu() < 0 || info.available_memory_bytes() < 0) return false;
  if (demand_->milli_cpu > info.available_milli_cpu()) return false;
  if (demand_->memory_bytes > info.available_memory_bytes()) return false;
  for (const GenericRequest& g : demand_->generic)
    if (!info.HasGeneric(g.kind, g.count)) return false;
  return true;
}

int64_t ResourcesFit::Score(const AgentNode& node) const {
  const NodeResources& total = node.info.node().resources;
  return AllocationScore(scoring_, total.milli_cpu, node.info.available_milli_cpu(),
                         demand_->milli_cpu, total.memory_bytes,
                         node.info.available_memory_bytes(), demand_->memory_bytes);
}

}  // namespace berth::agent
