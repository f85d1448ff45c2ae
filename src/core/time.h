// Time for Berth: millisecond timestamps, an injectable Clock, RFC 3339 text.
//
// Nothing in the engines reads the wall clock directly: callers pass a
// Timestamp, and long-lived components take a Clock so tests can drive time.
// SystemClock and ManualClock are safe to call from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace berth {

using Duration = std::chrono::milliseconds;
using Timestamp = std::chrono::time_point<std::chrono::system_clock, Duration>;

// Monotonic nanoseconds (std::chrono::steady_clock), for measuring phases
// and for timeouts that must not jump with the wall clock.
int64_t SteadyNowNs();

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp Now() const = 0;
  // Blocks on `cv` until `ready()` holds or this clock reaches `deadline`
  // (nullopt: no deadline); returns ready(). `lock` holds `cv`'s mutex on
  // entry and on return; whoever makes ready() true does so under that
  // mutex and notifies `cv`. Anything in Berth that waits for a time to
  // come waits here, so a ManualClock drives it in tests.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                         std::optional<Timestamp> deadline,
                         const std::function<bool()>& ready) const = 0;
};

// The real time.
class SystemClock final : public Clock {
 public:
  Timestamp Now() const override;
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 std::optional<Timestamp> deadline,
                 const std::function<bool()>& ready) const override;
};

// Time that moves only when told to; for tests and simulations. Set and
// Advance wake every WaitUntil in progress, which returns once the new time
// reaches its deadline. The mutex and condition variable of a wait must
// outlive any Set or Advance that runs while it waits.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = Timestamp{}) : now_(start.time_since_epoch().count()) {}
  Timestamp Now() const override { return Timestamp{Duration{now_.load()}}; }
  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                 std::optional<Timestamp> deadline,
                 const std::function<bool()>& ready) const override;
  void Set(Timestamp t);
  void Advance(Duration d);

 private:
  struct Waiter {
    std::mutex* mutex;
    std::condition_variable* cv;
  };
  void WakeWaiters();

  std::atomic<int64_t> now_;
  // Waits in progress. A wait registers while holding its own mutex;
  // WakeWaiters copies the list and lets go of waiters_mu_ before it takes
  // theirs, so the two locks are never taken in the other order.
  mutable std::mutex waiters_mu_;
  mutable std::vector<Waiter> waiters_;
};

// Parses "2026-01-01T00:10:00Z", with optional fractional seconds (kept to the
// millisecond) and a "Z" or "+hh:mm"/"-hh:mm" offset. A lowercase "t"/"z" and a
// space instead of "T" are accepted, as RFC 3339 allows.
Result<Timestamp> ParseRfc3339(std::string_view text);

// Formats as "2026-01-01T00:10:00Z", or with ".123" when milliseconds are non-zero.
std::string FormatRfc3339(Timestamp t);

// Parses a duration as Docker's flags take it (Go's time.ParseDuration): a
// sequence of decimal numbers with units "ms", "s", "m", "h" ("1m30s",
// "1.5s", "500ms"), or "0". Kept to the millisecond; negative or over 100
// years is refused.
Result<Duration> ParseDuration(std::string_view text);
// The shortest such text: "0s", "500ms", "5s", "1m30s", "2h0m5s".
std::string FormatDuration(Duration d);

}  // namespace berth
