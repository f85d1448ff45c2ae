// RestartPolicy: whether, and when, a service's task that ended is replaced
// by a new task in its slot (or on its node, for a global service): Docker's
// `--restart-condition`, `--restart-delay`, `--restart-max-attempts` and
// `--restart-window`, decided as SwarmKit's restart supervisor decides
// (shouldRestart): condition none never restarts; on-failure restarts a
// failed or rejected task but not a completed one; any restarts both; with
// max_attempts > 0, a slot restarts at most that many times within the
// window (over its whole life when the window is 0).
//
// Pure functions and a value type; safe from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/task.h"
#include "core/time.h"

namespace berth::orchestrator {

enum class RestartCondition : uint8_t { kNone, kOnFailure, kAny };
std::string_view ToString(RestartCondition condition);
Result<RestartCondition> ParseRestartCondition(std::string_view text);

struct RestartPolicy {
  RestartCondition condition = RestartCondition::kAny;  // default any
  Duration delay{5'000};                                // default 5 s before the new task runs
  uint64_t max_attempts = 0;                            // default 0: no limit
  Duration window{0};  // default 0: attempts are counted over the slot's life
  friend bool operator==(const RestartPolicy&, const RestartPolicy&) = default;
};

struct RestartDecision {
  bool restart = false;
  Timestamp at;        // restart: when the new task may be placed (now + delay)
  std::string reason;  // !restart: why not, for the task's message
};

// The decision for a task that ended in `ended` (complete, failed or
// rejected) at `now`, whose slot restarted at `attempts` (oldest first).
// The caller records `now` in `attempts` when it restarts; entries older
// than the window are dropped here.
RestartDecision DecideRestart(const RestartPolicy& policy, TaskState ended, Timestamp now,
                              std::deque<Timestamp>& attempts);

}  // namespace berth::orchestrator
