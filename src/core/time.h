// Time for Berth: millisecond timestamps, an injectable Clock, RFC 3339 text.
//
// Nothing in the engines reads the wall clock directly: callers pass a
// Timestamp, and long-lived components take a Clock so tests can drive time.
// SystemClock and ManualClock are safe to call from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

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
};

// The real time.
class SystemClock final : public Clock {
 public:
  Timestamp Now() const override;
};

// Time that moves only when told to; for tests and simulations.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = Timestamp{}) : now_(start.time_since_epoch().count()) {}
  Timestamp Now() const override { return Timestamp{Duration{now_.load()}}; }
  void Set(Timestamp t) { now_.store(t.time_since_epoch().count()); }
  void Advance(Duration d) { now_.fetch_add(d.count()); }

 private:
  std::atomic<int64_t> now_;
};

// Parses "2026-01-01T00:10:00Z", with optional fractional seconds (kept to the
// millisecond) and a "Z" or "+hh:mm"/"-hh:mm" offset. A lowercase "t"/"z" and a
// space instead of "T" are accepted, as RFC 3339 allows.
Result<Timestamp> ParseRfc3339(std::string_view text);

// Formats as "2026-01-01T00:10:00Z", or with ".123" when milliseconds are non-zero.
std::string FormatRfc3339(Timestamp t);

}  // namespace berth
