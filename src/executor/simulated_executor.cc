#include "executor/simulated_executor.h"

namespace berth::executor {

std::optional<std::string> SimulatedExecutor::Start(const TaskToRun&, Timestamp) {
  return "started by the simulated executor";
}

std::optional<Ended> SimulatedExecutor::Check(const TaskToRun& task, Timestamp now,
                                              std::optional<Timestamp>* due) {
  if (!task.run) return std::nullopt;
  const Timestamp started = task.started_at.value_or(now);
  const int64_t ran_ms = (now - started).count();
  if (ran_ms < task.run->duration_ms) {
    *due = started + Duration{task.run->duration_ms};
    return std::nullopt;
  }
  const bool failed = task.run->fail;
  return Ended{.failed = failed,
               .ran_ms = ran_ms,
               .message = std::string(failed ? "failed" : "completed") + " after " +
                          std::to_string(ran_ms) + " ms (simulated)"};
}

}  // namespace berth::executor
