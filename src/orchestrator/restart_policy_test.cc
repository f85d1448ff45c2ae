#include "orchestrator/restart_policy.h"

#include <gtest/gtest.h>

namespace berth::orchestrator {
namespace {

const Timestamp kT0 = *ParseRfc3339("2026-01-01T00:00:00Z");

TEST(RestartPolicy, EachConditionRestartsWhatDockerRestarts) {
  std::deque<Timestamp> attempts;
  for (TaskState ended : {TaskState::kComplete, TaskState::kFailed, TaskState::kRejected}) {
    EXPECT_FALSE(DecideRestart({RestartCondition::kNone}, ended, kT0, attempts).restart);
    EXPECT_EQ(DecideRestart({RestartCondition::kOnFailure}, ended, kT0, attempts).restart,
              ended != TaskState::kComplete);
    EXPECT_TRUE(DecideRestart({RestartCondition::kAny}, ended, kT0, attempts).restart);
  }
  EXPECT_EQ(
      DecideRestart({RestartCondition::kOnFailure}, TaskState::kComplete, kT0, attempts).reason,
      "not restarted: it completed and the restart condition is on-failure");
}

TEST(RestartPolicy, TheNewTaskWaitsTheDelay) {
  std::deque<Timestamp> attempts;
  RestartPolicy policy;  // Docker's defaults: any, 5 s
  const RestartDecision d = DecideRestart(policy, TaskState::kFailed, kT0, attempts);
  EXPECT_TRUE(d.restart);
  EXPECT_EQ(d.at, kT0 + std::chrono::seconds(5));
}

// Three attempts within a minute: the fourth failure inside the window is
// not restarted; once the oldest attempt is a minute old, one more is.
TEST(RestartPolicy, MaxAttemptsCountWithinTheWindow) {
  RestartPolicy policy{RestartCondition::kAny, Duration{0}, 3, std::chrono::minutes(1)};
  std::deque<Timestamp> attempts;
  for (int i = 0; i < 3; ++i) {
    const Timestamp at = kT0 + std::chrono::seconds(10 * i);
    ASSERT_TRUE(DecideRestart(policy, TaskState::kFailed, at, attempts).restart) << i;
    attempts.push_back(at);
  }
  const RestartDecision refused =
      DecideRestart(policy, TaskState::kFailed, kT0 + std::chrono::seconds(30), attempts);
  EXPECT_FALSE(refused.restart);
  EXPECT_EQ(refused.reason,
            "not restarted: its slot restarted 3 times within 1m0s (restart max attempts 3)");
  EXPECT_TRUE(
      DecideRestart(policy, TaskState::kFailed, kT0 + std::chrono::seconds(60), attempts).restart);
  EXPECT_EQ(attempts.size(), 2u);  // the attempt at 0 s left the window
}

TEST(RestartPolicy, WithoutAWindowAttemptsCountForever) {
  RestartPolicy policy{RestartCondition::kOnFailure, Duration{0}, 1, Duration{0}};
  std::deque<Timestamp> attempts{kT0};
  EXPECT_FALSE(
      DecideRestart(policy, TaskState::kFailed, kT0 + std::chrono::hours(1000), attempts).restart);
}

TEST(RestartPolicy, ConditionsParseAsDockerSpellsThem) {
  EXPECT_EQ(*ParseRestartCondition("on-failure"), RestartCondition::kOnFailure);
  EXPECT_EQ(ParseRestartCondition("always").status().message(),
            "restart condition 'always' is not one of none, on-failure, any");
}

}  // namespace
}  // namespace berth::orchestrator
