#include "api/lifecycle_codec.h"

#include <gtest/gtest.h>

namespace berth::api {
namespace {

TEST(LifecycleCodec, ARestartPolicyReadsDockersValuesAndWritesEveryField) {
  orchestrator::RestartPolicy policy;
  ASSERT_TRUE(
      DecodeRestartPolicy(
          Json::parse(R"({"condition": "on-failure", "delay": "1m30s", "max_attempts": 3})"),
          "restart_policy", &policy)
          .ok());
  EXPECT_EQ(policy, (orchestrator::RestartPolicy{orchestrator::RestartCondition::kOnFailure,
                                                 std::chrono::seconds(90), 3, Duration{0}}));
  EXPECT_EQ(EncodeRestartPolicy(policy),
            Json::parse(R"({"condition": "on-failure", "delay": "1m30s", "max_attempts": 3,
                            "window": "0s"})"));
}

// A partial change (PATCH) keeps the fields it does not name; a refused one
// changes nothing.
TEST(LifecycleCodec, APartialPolicyChangesOnlyTheFieldsItNames) {
  orchestrator::RestartPolicy policy{orchestrator::RestartCondition::kNone, Duration{1'000}, 3,
                                     Duration{60'000}};
  ASSERT_TRUE(
      DecodeRestartPolicy(Json::parse(R"({"delay": "2s"})"), "restart_policy", &policy).ok());
  EXPECT_EQ(policy, (orchestrator::RestartPolicy{orchestrator::RestartCondition::kNone,
                                                 Duration{2'000}, 3, Duration{60'000}}));
  EXPECT_FALSE(DecodeRestartPolicy(Json::parse(R"({"max_attempts": 9, "condition": "x"})"),
                                   "restart_policy", &policy)
                   .ok());
  EXPECT_EQ(policy.max_attempts, 3u);
  orchestrator::UpdateConfig config;
  config.order = orchestrator::UpdateOrder::kStartFirst;
  ASSERT_TRUE(
      DecodeUpdateConfig(Json::parse(R"({"parallelism": 4})"), "update_config", &config).ok());
  EXPECT_EQ(config.parallelism, 4u);
  EXPECT_EQ(config.order, orchestrator::UpdateOrder::kStartFirst);
}

TEST(LifecycleCodec, ABadRestartPolicyIsRefusedWithItsPath) {
  orchestrator::RestartPolicy policy;
  const std::pair<const char*, const char*> bad[] = {
      {R"({"condition": "always"})",
       "restart_policy.condition: restart condition 'always' is not one of none, on-failure, any"},
      {R"({"delay": 5})", "restart_policy.delay: expected a duration such as \"5s\", got number"},
      {R"({"window": "5 minutes"})",
       "restart_policy.window: '5 minutes' is not a duration (expected e.g. 500ms, 5s, 1m30s, 2h)"},
      {R"({"max_attempts": -1})", "restart_policy.max_attempts: expected"},
      {R"({"tries": 1})", "restart_policy: unknown field"},
  };
  for (const auto& [body, message] : bad) {
    Status s = DecodeRestartPolicy(Json::parse(body), "restart_policy", &policy);
    EXPECT_TRUE(s.message().starts_with(message)) << body << ": " << s.message();
  }
}

}  // namespace
}  // namespace berth::api
