#include "executor/simulated_executor.h"

#include <gtest/gtest.h>

namespace berth::executor {
namespace {

const Timestamp kStart = *ParseRfc3339("2026-01-01T00:00:00Z");

// The outcome is the run's, at exactly its duration after the start, and
// depends on nothing but the task and the time (no state: a restarted
// berthd gets the same answer).
TEST(SimulatedExecutor, EndsAsItsRunSaysAtExactlyItsDuration) {
  const std::string id = "j.1", node = "n1";
  const std::optional<SimulatedRun> run = SimulatedRun{30'000, true};
  const TaskToRun task{id, node, run, kStart};
  std::optional<Timestamp> due;
  EXPECT_FALSE(SimulatedExecutor().Check(task, kStart + Duration{29'999}, &due).has_value());
  EXPECT_EQ(due, kStart + Duration{30'000});
  const std::optional<Ended> ended =
      SimulatedExecutor().Check(task, kStart + Duration{30'250}, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_EQ(ended->ran_ms, 30'250);  // it is checked late: it ran until then
  EXPECT_EQ(ended->message, "failed after 30250 ms (simulated)");
  EXPECT_EQ(SimulatedExecutor().Start(task, kStart), "started by the simulated executor");
}

}  // namespace
}  // namespace berth::executor
