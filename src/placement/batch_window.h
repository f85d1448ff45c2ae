// BatchWindow: when to run the next scheduling pass (docs/placement.md,
// "Batching").
//
// After an event the scheduler waits `quiet` (50 ms) for more; each new event
// restarts that wait, but a decision is never delayed more than `max_delay`
// (1 s) after the first waiting event. Pure logic over timestamps, so the
// daemon's loop and the tests drive it with any clock. Not thread-safe.
#pragma once

#include <optional>

#include "core/time.h"

namespace berth::placement {

struct BatchWindowOptions {
  Duration quiet = Duration{50};        // wait after each event
  Duration max_delay = Duration{1000};  // cap after the first waiting event
};

class BatchWindow {
 public:
  explicit BatchWindow(BatchWindowOptions options = {}) : options_(options) {}

  // A task or node event arrived at `now`.
  void OnEvent(Timestamp now);
  // When the pass should run; nullopt when nothing is waiting.
  std::optional<Timestamp> Deadline() const;
  // Whether the pass should run at `now`.
  bool Due(Timestamp now) const;
  // The pass ran: nothing is waiting any more.
  void Reset() {
    first_.reset();
    last_.reset();
  }

 private:
  BatchWindowOptions options_;
  std::optional<Timestamp> first_;
  std::optional<Timestamp> last_;
};

}  // namespace berth::placement
