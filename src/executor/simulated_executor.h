// SimulatedExecutor: the Executor of berthd's simulated tasks. A task
// starts at once; one with a run (SimulatedRun) ends `duration_ms` after
// it started, complete or failed as the run says, and one without runs
// until stopped. It keeps no state: the start time and run are the task's,
// so the outcome depends only on them and on the clock's time.
#pragma once

#include "executor/executor.h"

namespace berth::executor {

class SimulatedExecutor final : public Executor {
 public:
  std::optional<std::string> Start(const TaskToRun& task, Timestamp now) override;
  std::optional<Ended> Check(const TaskToRun& task, Timestamp now,
                             std::optional<Timestamp>* due) override;
  void Stop(const TaskToRun&) override {}
};

}  // namespace berth::executor
