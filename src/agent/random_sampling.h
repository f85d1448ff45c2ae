// RandomSampling: each request visits the nodes in a random order without
// repeats: a random start and a random step coprime with the node count, so
// start, start + step, ... (mod n) visits every node exactly once. O(1)
// memory per request, where a shuffled copy would cost O(nodes).
#pragma once

#include <mutex>
#include <random>

#include "agent/sampling_strategy.h"

namespace berth::agent {

class RandomSampling final : public SamplingStrategy {
 public:
  explicit RandomSampling(uint64_t seed) : rng_(seed) {}
  SampleCursor Begin(uint32_t nodes) override;
  uint32_t Next(SampleCursor& cursor, uint32_t nodes) override {
    return static_cast<uint32_t>((cursor.start + cursor.step * cursor.taken++) % nodes);
  }

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;
};

}  // namespace berth::agent
