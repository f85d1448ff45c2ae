// SamplingStrategy: proposes nodes to an agent's sampling pipelines
// (docs/threephase.md, "Sampling"). One strategy object is shared by all the
// agent's pipelines. A request walks a SampleCursor; proposals within one
// request never repeat until every node has been proposed once.
// Thread-safe.
#pragma once

#include <cstdint>

namespace berth::agent {

struct SampleCursor {
  uint64_t start = 0;
  uint64_t step = 1;
  uint64_t taken = 0;
};

class SamplingStrategy {
 public:
  virtual ~SamplingStrategy() = default;
  // Starts a request over `nodes` nodes (nodes > 0).
  virtual SampleCursor Begin(uint32_t nodes) = 0;
  // The next node to look at.
  virtual uint32_t Next(SampleCursor& cursor, uint32_t nodes) = 0;
};

}  // namespace berth::agent
