// ResourcesFit: filter on every requested resource, and the least- or
// most-allocated score (docs/threephase.md, "Plugins"):
//   used(r) = total(r) - free(r) + demand(r), over cpu and memory with total > 0
//   mean    = average of used(r) / total(r)
//   least   = 100 - floor(100 * mean)    most = floor(100 * mean)
// computed exactly in integers, clamped to 0..100. A node whose free amount
// is negative never passes, whatever the demand (a negative free amount is a
// pending over-reservation).
#pragma once

#include "agent/node_plugin.h"

namespace berth::agent {

enum class ResourceScoring { kLeastAllocated, kMostAllocated };

// The score alone, shared with the scheduler side (which scores samples).
int64_t AllocationScore(ResourceScoring scoring, int64_t total_cpu, int64_t free_cpu,
                        int64_t demand_cpu, int64_t total_memory, int64_t free_memory,
                        int64_t demand_memory);

class ResourcesFit final : public NodePlugin {
 public:
  explicit ResourcesFit(ResourceScoring scoring = ResourceScoring::kLeastAllocated)
      : scoring_(scoring) {}
  std::string_view name() const override { return "resources-fit"; }
  void SetTask(const PlacementTask& task) override { demand_ = &task.spec->reservations; }
  bool Filter(const AgentNode& node) const override;
  bool HasScore() const override { return true; }
  int64_t Score(const AgentNode& node) const override;

 private:
  ResourceScoring scoring_;
  const Reservations* demand_ = nullptr;
};

}  // namespace berth::agent
