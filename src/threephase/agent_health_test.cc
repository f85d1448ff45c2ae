#include "threephase/agent_health.h"

#include <gtest/gtest.h>

namespace berth::threephase {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(AgentHealth, SkipsAnAgentAfterConsecutiveFailuresForTheSkipTime) {
  AgentHealth health(2, {3, std::chrono::seconds(1)});
  health.Failed(0, 0);
  health.Failed(0, 0);
  EXPECT_TRUE(health.Available(0, 0));
  health.Failed(0, 10);
  EXPECT_FALSE(health.Available(0, 10));
  EXPECT_FALSE(health.Available(0, 10 + kSecond - 1));
  EXPECT_TRUE(health.Available(0, 10 + kSecond));
  EXPECT_TRUE(health.Available(1, 10));  // the other agent is not affected
  EXPECT_EQ(health.skips(), 1u);
}

TEST(AgentHealth, OneFailureAfterTheSkipSkipsAgainAndASuccessClears) {
  AgentHealth health(1, {2, std::chrono::seconds(1)});
  health.Failed(0, 0);
  health.Failed(0, 0);
  health.Failed(0, 2 * kSecond);  // asked again after the skip, still failing
  EXPECT_FALSE(health.Available(0, 2 * kSecond));
  health.Succeeded(0);
  health.Failed(0, 4 * kSecond);  // one failure after a success is not enough
  EXPECT_TRUE(health.Available(0, 4 * kSecond));
}

TEST(AgentHealth, ZeroFailuresToSkipNeverSkips) {
  AgentHealth health(1, {0, std::chrono::seconds(1)});
  for (int i = 0; i < 10; ++i) health.Failed(0, 0);
  EXPECT_TRUE(health.Available(0, 0));
}

}  // namespace
}  // namespace berth::threephase
