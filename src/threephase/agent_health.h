// AgentHealth: which agents a scheduler instance asks (a circuit breaker).
//
// An agent whose calls (samples or commits) failed `failures_to_skip` times
// in a row is skipped for `skip_for`; after that it is asked again, and one
// more failure skips it again at once, while one success clears its record.
// A dead agent thus costs a few timeouts per `skip_for` instead of one per
// task that draws it (the three-phase workflow counts its silence as "no
// nodes", which would keep failing the tasks that drew only it;
// docs/threephase.md, "Choices the spec leaves open").
//
// Thread-safe and lock-free: every sampler and decision thread reports and
// asks concurrently. Times are steady-clock nanoseconds from the caller, so
// tests can drive them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/time.h"

namespace berth::threephase {

struct AgentHealthOptions {
  int failures_to_skip = 3;                     // consecutive failures; 0 disables skipping
  Duration skip_for = std::chrono::seconds(1);  // how long a failing agent is left out
};

class AgentHealth {
 public:
  AgentHealth(size_t agents, AgentHealthOptions options);

  // Whether `agent` may be asked at `now_ns`.
  bool Available(size_t agent, int64_t now_ns) const;
  void Succeeded(size_t agent);
  void Failed(size_t agent, int64_t now_ns);
  // Times an agent started being skipped.
  uint64_t skips() const { return skips_.load(std::memory_order_relaxed); }

 private:
  struct Record {
    std::atomic<int> consecutive_failures{0};
    std::atomic<int64_t> skip_until_ns{0};
  };
  AgentHealthOptions options_;
  std::unique_ptr<Record[]> records_;
  std::atomic<uint64_t> skips_{0};
};

}  // namespace berth::threephase
