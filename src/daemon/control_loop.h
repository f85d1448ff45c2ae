// ControlLoop: the thread that runs Reconciler passes (ARCHITECTURE.md:
// "state changes on one control loop").
//
// A pass runs after a change is reported (Notify), once the batch window is
// over: `batch_delay` after the last notification, at most `max_batch_delay`
// after the first (the 50 ms / 1 s of the architecture), and at least every
// `idle_interval` even without one. A pass that wrote something is followed
// by another, so a change runs to a settled state (for example created ->
// assigned -> running) without further notifications. The state is settled
// when a pass changed nothing and waits for no agent.
//
// Notify and WaitSettled from any thread; Start and Stop from the owner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "core/time.h"
#include "daemon/reconciler.h"

namespace berth::daemon {

struct ControlLoopOptions {
  Duration batch_delay = std::chrono::milliseconds(50);
  Duration max_batch_delay = std::chrono::seconds(1);
  Duration idle_interval = std::chrono::seconds(1);
};

class ControlLoop {
 public:
  ControlLoop(Reconciler& reconciler, const Clock& clock, ControlLoopOptions options = {})
      : reconciler_(reconciler), clock_(clock), options_(options) {}
  ~ControlLoop() { Stop(); }

  void Start();
  void Stop();
  // Reports a change of the stored state.
  void Notify();
  // Waits until a pass that began after this call found nothing to change;
  // false on timeout.
  bool WaitSettled(Duration timeout);

  uint64_t passes() const { return passes_.load(); }
  uint64_t pass_errors() const { return pass_errors_.load(); }

 private:
  void Loop();
  void WaitForBatch(std::unique_lock<std::mutex>& lock);

  Reconciler& reconciler_;
  const Clock& clock_;
  ControlLoopOptions options_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_, settled_;
  bool stopping_ = false, notified_ = false;
  uint64_t requests_ = 0;      // WaitSettled calls and notifications so far
  uint64_t settled_upto_ = 0;  // requests_ value covered by the last settled pass
  std::atomic<uint64_t> passes_{0}, pass_errors_{0};
};

}  // namespace berth::daemon
