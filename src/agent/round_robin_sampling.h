// RoundRobinSampling: one position shared by every pipeline of the agent, so
// consecutive requests get consecutive nodes and two requests never get the
// same nodes while others are unvisited.
#pragma once

#include <atomic>

#include "agent/sampling_strategy.h"

namespace berth::agent {

class RoundRobinSampling final : public SamplingStrategy {
 public:
  SampleCursor Begin(uint32_t) override { return {}; }
  uint32_t Next(SampleCursor& cursor, uint32_t nodes) override {
    ++cursor.taken;
    return static_cast<uint32_t>(position_.fetch_add(1, std::memory_order_relaxed) % nodes);
  }

 private:
  std::atomic<uint64_t> position_{0};
};

}  // namespace berth::agent
