#include "agent/random_sampling.h"

#include <numeric>

namespace berth::agent {

SampleCursor RandomSampling::Begin(uint32_t nodes) {
  std::lock_guard lock(mu_);
  SampleCursor cursor;
  cursor.start = rng_() % nodes;
  if (nodes > 2) {
    do {
      cursor.step = 1 + rng_() % (nodes - 1);
    } while (std::gcd<uint64_t, uint64_t>(cursor.step, nodes) != 1);
  }
  return cursor;
}

}  // namespace berth::agent
