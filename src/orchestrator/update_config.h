// UpdateConfig: how a service moves its tasks to a new spec version (a
// rolling update), or back to the previous one (a rollback): Docker's
// `--update-*` and `--rollback-*` flags, with SwarmKit's defaults.
//
//  - parallelism: tasks replaced at once (0: all at once);
//  - delay: wait after a batch's tasks run, before the next batch;
//  - monitor: how long a new task must run before its replacement counts as
//    done; a new task that fails or is rejected within it is a failure;
//  - max_failure_ratio: the failure_action is taken once failures exceed
//    this fraction of the tasks being updated (0: at the first failure);
//  - failure_action: pause the update, continue, or roll back (a rollback
//    that fails pauses);
//  - order: stop-first stops the old task before its replacement is placed;
//    start-first places the replacement while the old task runs (both hold
//    their resources, so the node limits are never exceeded) and stops the
//    old one once the new one runs.
//
// Value types; safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "core/time.h"

namespace berth::orchestrator {

enum class FailureAction : uint8_t { kPause, kContinue, kRollback };
enum class UpdateOrder : uint8_t { kStopFirst, kStartFirst };
std::string_view ToString(FailureAction action);
std::string_view ToString(UpdateOrder order);
Result<FailureAction> ParseFailureAction(std::string_view text);
Result<UpdateOrder> ParseUpdateOrder(std::string_view text);

struct UpdateConfig {
  uint64_t parallelism = 1;                              // default 1
  Duration delay{0};                                     // default 0s
  FailureAction failure_action = FailureAction::kPause;  // default pause
  Duration monitor{5'000};                               // default 5s
  double max_failure_ratio = 0;                          // default 0
  UpdateOrder order = UpdateOrder::kStopFirst;           // default stop-first
  friend bool operator==(const UpdateConfig&, const UpdateConfig&) = default;
};

// Whether `failures` of `total` tasks updated so far exceed the ratio.
inline bool TooManyFailures(const UpdateConfig& config, uint64_t failures, uint64_t total) {
  return failures > 0 &&
         static_cast<double>(failures) > config.max_failure_ratio * static_cast<double>(total);
}

}  // namespace berth::orchestrator
