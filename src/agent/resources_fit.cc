#include "agent/resources_fit.h"

#include <algorithm>
#include <cstdint>

namespace berth::agent {

namespace {

int64_t FromAllocated(ResourceScoring scoring, int64_t allocated) {
  return scoring == ResourceScoring::kLeastAllocated ? 100 - allocated : allocated;
}

// The common case, both totals positive and every product within 64 bits,
// in 64-bit arithmetic: 128-bit division costs several times more and this
// runs once per sampled node. Returns false when the wide path is needed.
bool AllocatedPercent64(int64_t total_cpu, int64_t free_cpu, int64_t demand_cpu,
                        int64_t total_memory, int64_t free_memory, int64_t demand_memory,
                        int64_t* allocated) {
  if (total_cpu <= 0 || total_memory <= 0 || total_memory > INT64_MAX / 2) return false;
  int64_t cpu_gap = 0, memory_gap = 0, used_cpu = 0, used_memory = 0;
  int64_t cpu_share = 0, memory_share = 0, numerator = 0, scaled = 0, denominator = 0;
  // floor(100 * (used_cpu * total_memory + used_memory * total_cpu) / (2 * total_cpu *
  // total_memory))
  if (__builtin_sub_overflow(total_cpu, free_cpu, &cpu_gap) ||
      __builtin_add_overflow(cpu_gap, demand_cpu, &used_cpu) ||
      __builtin_sub_overflow(total_memory, free_memory, &memory_gap) ||
      __builtin_add_overflow(memory_gap, demand_memory, &used_memory) ||
      __builtin_mul_overflow(used_cpu, total_memory, &cpu_share) ||
      __builtin_mul_overflow(used_memory, total_cpu, &memory_share) ||
      __builtin_add_overflow(cpu_share, memory_share, &numerator) ||
      __builtin_mul_overflow(numerator, 100, &scaled) ||
      __builtin_mul_overflow(total_cpu, 2 * total_memory, &denominator))
    return false;
  *allocated = std::clamp<int64_t>(scaled / denominator, 0, 100);
  return true;
}

}  // namespace

int64_t AllocationScore(ResourceScoring scoring, int64_t total_cpu, int64_t free_cpu,
                        int64_t demand_cpu, int64_t total_memory, int64_t free_memory,
                        int64_t demand_memory) {
  int64_t allocated = 0;
  if (AllocatedPercent64(total_cpu, free_cpu, demand_cpu, total_memory, free_memory, demand_memory,
                         &allocated))
    return FromAllocated(scoring, allocated);
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
  if (k == 0) return FromAllocated(scoring, 0);
  __int128 percent = 100 * numerator / (denominator * k);
  percent = std::clamp<__int128>(percent, 0, 100);
  return FromAllocated(scoring, static_cast<int64_t>(percent));
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
                         demand_->milli_cpu, total.memory_bytes, node.info.available_memory_bytes(),
                         demand_->memory_bytes);
}

}  // namespace berth::agent
