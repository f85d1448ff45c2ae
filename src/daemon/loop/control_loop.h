// ControlLoop: the thread that runs Reconciler passes: every state change
// of tasks happens on this one loop (docs/architecture.md, "Principles").
//
// When a pass runs:
//  - after changes (Notify), once the batch window closes
//    (placement::BatchWindow on the injected clock: `quiet` after the last
//    change, at most `max_delay` after the first);
//  - at once after a pass that wrote something, so a change runs to a
//    settled state (created -> assigned -> running) without notifications;
//  - when the last pass's timer is due (PassSummary::next_due: a simulated
//    task's end, the fair-share rebalance timer, an agent check or retry);
//  - after a failed pass, `retry_after` later.
// Nothing else: an idle berthd runs no pass, whatever it stores.
//
// Batching (docs/berthd.md, "Batching"): changes that arrive while a pass
// runs are handled together by the next one, so a burst of identical tasks
// is still scheduled as one group (docs/placement.md, "Batching"). The window's `quiet`
// defaults to 0 in berthd: a pass starts as soon as the loop is free,
// because waiting while nothing runs delays every task and groups nothing
// that the next pass would not group anyway. Set it (berthd
// --batch-quiet-ms 50) for the engine's exact window.
//
// The state is settled when a pass changed nothing and waits for no agent.
//
// Notify, WaitSettled and WaitBlocked from any thread; Start and Stop from
// the owner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "core/histogram.h"
#include "core/time.h"
#include "daemon/loop/reconciler.h"
#include "placement/batch_window.h"

namespace berth::daemon {

struct ControlLoopOptions {
  // quiet 0 (pass as soon as the loop is free), max_delay 1 s.
  placement::BatchWindowOptions window{Duration{0}, Duration{1000}};
  // A failed pass (the store failed, say) is tried again this much later.
  Duration retry_after = std::chrono::seconds(1);
};

class ControlLoop {
 public:
  // `clock` paces the batch window and the passes' timers; both outlive
  // the loop.
  ControlLoop(Reconciler& reconciler, const Clock& clock, ControlLoopOptions options = {})
      : reconciler_(reconciler), clock_(clock), options_(options), window_(options.window) {}
  ~ControlLoop() { Stop(); }

  void Start();
  void Stop();
  // Reports a change of the stored state.
  void Notify();
  // Runs a pass at once (outside the batch window) and waits until a pass
  // that began after this call found nothing to change; false on timeout
  // (real time: a client's deadline, not a loop timer).
  bool WaitSettled(Duration timeout);
  // For tests on a ManualClock: waits (up to `timeout`, real time) until the
  // loop has taken every notification and blocks waiting for a change or
  // for a deadline after the clock's time at this call. Its passes() then
  // stays put until the clock moves or something changes.
  bool WaitBlocked(Duration timeout);

  uint64_t passes() const { return passes_.load(); }
  uint64_t pass_errors() const { return pass_errors_.load(); }
  // What the passes cost so far: wall time inside them (measured, not a
  // loop timer; commits included) and the tasks they looked at
  // (PassSummary::visited).
  uint64_t pass_nanos() const { return pass_nanos_.load(); }
  // Each pass's wall time, commits included.
  const Histogram& pass_durations() const { return pass_durations_; }
  uint64_t tasks_visited() const { return tasks_visited_.load(); }

 private:
  void Loop();
  bool Due(Timestamp now) const;
  // Blocks until a notification, Stop, or the earliest deadline.
  void WaitForWork(std::unique_lock<std::mutex>& lock);
  // Runs one pass without the lock; returns whether another is due at once.
  bool RunPass(std::unique_lock<std::mutex>& lock);

  Reconciler& reconciler_;
  const Clock& clock_;
  ControlLoopOptions options_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_, settled_, blocked_cv_;
  bool stopping_ = false, notified_ = false, settle_requested_ = false;
  placement::BatchWindow window_;
  std::optional<Timestamp> timer_;          // the last pass's next_due or retry
  bool blocked_ = false;                    // the loop waits in WaitForWork...
  std::optional<Timestamp> blocked_until_;  // ...until this time, or a change
  uint64_t requests_ = 0;                   // WaitSettled calls and notifications so far
  uint64_t settled_upto_ = 0;               // requests_ value covered by the last settled pass
  std::atomic<uint64_t> passes_{0}, pass_errors_{0};
  std::atomic<uint64_t> pass_nanos_{0}, tasks_visited_{0};
  Histogram pass_durations_;
};

}  // namespace berth::daemon
