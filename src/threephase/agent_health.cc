#include "threephase/agent_health.h"

#include <chrono>

namespace berth::threephase {

AgentHealth::AgentHealth(size_t agents, AgentHealthOptions options)
    : options_(options), records_(std::make_unique<Record[]>(agents)) {}

bool AgentHealth::Available(size_t agent, int64_t now_ns) const {
  return now_ns >= records_[agent].skip_until_ns.load(std::memory_order_relaxed);
}

void AgentHealth::Succeeded(size_t agent) {
  // Read first: every call succeeds in the common case, and a store would
  // bounce the record's cache line between the calling threads.
  std::atomic<int>& failures = records_[agent].consecutive_failures;
  if (failures.load(std::memory_order_relaxed) != 0) failures.store(0, std::memory_order_relaxed);
}

void AgentHealth::Failed(size_t agent, int64_t now_ns) {
  const int failures =
      records_[agent].consecutive_failures.fetch_add(1, std::memory_order_relaxed) + 1;
  if (options_.failures_to_skip <= 0 || failures < options_.failures_to_skip) return;
  const int64_t skip_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.skip_for).count();
  records_[agent].skip_until_ns.store(now_ns + skip_ns, std::memory_order_relaxed);
  skips_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace berth::threephase
