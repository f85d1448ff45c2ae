// What every Executor promises the control loop (executor.h), run against
// each implementation (as Mesos runs its sorter tests against every
// sorter).
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "executor/simulated_executor.h"

namespace berth::executor {
namespace {

using Factory = std::function<std::unique_ptr<Executor>()>;

class ExecutorContract : public testing::TestWithParam<Factory> {
 protected:
  std::unique_ptr<Executor> executor_ = GetParam()();
  const Timestamp t0_ = *ParseRfc3339("2026-01-01T00:00:00Z");
  const std::string id_ = "web.1", node_ = "n1";
  const std::optional<SimulatedRun> no_run_;
};

TEST_P(ExecutorContract, AStartedTaskSaysHowItStarted) {
  const std::optional<std::string> started =
      executor_->Start({id_, node_, no_run_, std::nullopt}, t0_);
  ASSERT_TRUE(started.has_value());
  EXPECT_FALSE(started->empty());
}

// A task with nothing to end it runs on, and no timer is asked for it.
TEST_P(ExecutorContract, ATaskWithoutAnEndRunsUntilStopped) {
  const TaskToRun task{id_, node_, no_run_, t0_};
  executor_->Start(task, t0_);
  std::optional<Timestamp> due;
  EXPECT_FALSE(executor_->Check(task, t0_ + std::chrono::hours(24), &due).has_value());
  EXPECT_FALSE(due.has_value());
  executor_->Stop(task);
}

// A task that ends is reported once its time came, with a message, and the
// time it ran; before that the executor names when to look again.
TEST_P(ExecutorContract, AnEndingTaskIsReportedWhenItsTimeComes) {
  const std::optional<SimulatedRun> run = SimulatedRun{1500, false};
  const TaskToRun task{id_, node_, run, t0_};
  executor_->Start(task, t0_);
  std::optional<Timestamp> due;
  EXPECT_FALSE(executor_->Check(task, t0_ + Duration{1499}, &due).has_value());
  ASSERT_TRUE(due.has_value());
  EXPECT_LE(*due, t0_ + Duration{1500});
  const std::optional<Ended> ended = executor_->Check(task, *due, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_FALSE(ended->failed);
  EXPECT_EQ(ended->ran_ms, 1500);
  EXPECT_FALSE(ended->message.empty());
}

INSTANTIATE_TEST_SUITE_P(Every, ExecutorContract, testing::Values(Factory([] {
                           return std::make_unique<SimulatedExecutor>();
                         })),
                         [](const auto&) { return std::string("simulated"); });

}  // namespace
}  // namespace berth::executor
