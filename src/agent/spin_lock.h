// SpinLock: a one-byte lock for the agent's per-node critical sections,
// which last tens of nanoseconds. A std::mutex per node costs 40 bytes and
// a library call per lock; at hundreds of node reads per sampled task that
// was a fifth of the sampling time. Waiters spin with a pause and yield
// after a while, so a preempted holder does not burn a core.
// Satisfies Lockable (std::lock_guard works). Thread-safe.
#pragma once

#include <atomic>
#include <thread>

namespace berth::agent {

class SpinLock {
 public:
  void lock() {
    for (int spins = 0; flag_.exchange(true, std::memory_order_acquire); ++spins) {
      while (flag_.load(std::memory_order_relaxed)) {
        if (++spins > 64) std::this_thread::yield();
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  bool try_lock() { return !flag_.exchange(true, std::memory_order_acquire); }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

}  // namespace berth::agent
