#include "fairshare/config.h"

#include <gtest/gtest.h>

namespace berth::fairshare {
namespace {

TEST(Config, DefaultIsOneClassForEveryone) {
  Config config;
  ASSERT_EQ(config.class_count(), 1u);
  EXPECT_EQ(config.ClassName(0), "default");
  EXPECT_EQ(config.Percent(0), 100);
  EXPECT_EQ(config.ClassOf("anyone"), 0u);
  EXPECT_FALSE(config.RebalancingEnabled());
}

TEST(Config, RescalesAsTheSpecsExample) {
  Config config;
  ASSERT_TRUE(
      config.SetClassLoadPercents({{"c0", 30}, {"c1", 25}, {"c2", 15}, {"c3", 0}, {"c4", 10}}).ok());
  std::vector<std::string> names;
  std::vector<int64_t> percents;
  for (ClassIndex c = 0; c < config.class_count(); ++c) {
    names.push_back(config.ClassName(c));
    percents.push_back(config.Percent(c));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"c0", "c1", "c2", "c4", "c3"}));
  EXPECT_EQ(percents, (std::vector<int64_t>{39, 31, 18, 12, 0}));
  // Get returns what was set, in class order.
  EXPECT_EQ(config.ClassLoadPercents(),
            (std::vector<ClassShare>{{"c0", 30}, {"c1", 25}, {"c2", 15}, {"c4", 10}, {"c3", 0}}));
}

TEST(Config, TiesInClassOrderGoByName) {
  Config config;
  ASSERT_TRUE(config.SetClassLoadPercents({{"b", 50}, {"a", 50}}).ok());
  EXPECT_EQ(config.ClassName(0), "a");
  EXPECT_EQ(config.ClassName(1), "b");
}

TEST(Config, InvalidChangesAreRejectedAndLeaveTheOldConfiguration) {
  Config config;
  ASSERT_TRUE(config.SetClassLoadPercents({{"a", 60}, {"b", 40}}).ok());
  ASSERT_TRUE(config.SetRequestorMap({{"^a", "a"}}).ok());
  const uint64_t generation = config.generation();
  auto expect_error = [&](Status s, const std::string& message) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), message);
  };
  expect_error(config.SetClassLoadPercents({}), "at least one class is needed");
  expect_error(config.SetClassLoadPercents({{"a", -1}, {"b", 40}}),
               "class 'a' has a negative load percent (-1)");
  expect_error(config.SetClassLoadPercents({{"a", 0}, {"b", 0}}),
               "every class has a load percent of 0");
  expect_error(config.SetClassLoadPercents({{"a", 10}, {"a", 20}}), "class 'a' is listed twice");
  expect_error(config.SetClassLoadPercents({{"", 10}}), "a class name must not be empty");
  // Dropping class a would orphan the rule that names it.
  expect_error(config.SetClassLoadPercents({{"b", 100}}),
               "requestor rule 0 ('^a') names unknown class 'a'");
  expect_error(config.SetRequestorMap({{"^x", "nope"}}),
               "requestor rule 0 ('^x') names unknown class 'nope'");
  Status bad_pattern = config.SetRequestorMap({{"(unclosed", "a"}});
  EXPECT_EQ(bad_pattern.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_pattern.message().rfind("requestor pattern '(unclosed' does not compile: ", 0), 0u)
      << bad_pattern.message();
  // Nothing changed.
  EXPECT_EQ(config.generation(), generation);
  EXPECT_EQ(config.ClassLoadPercents(), (std::vector<ClassShare>{{"a", 60}, {"b", 40}}));
  EXPECT_EQ(config.RequestorMap(), (std::vector<RequestorRule>{{"^a", "a"}}));
}

TEST(Config, RebalanceParameters) {
  Config config;
  config.SetRebalanceThreshold(50);
  EXPECT_FALSE(config.RebalancingEnabled());  // no duration yet
  config.SetRebalanceMinDuration(std::chrono::minutes(2));
  EXPECT_TRUE(config.RebalancingEnabled());
  EXPECT_EQ(config.RebalanceThreshold(), 50);
  EXPECT_EQ(config.RebalanceMinDuration(), std::chrono::minutes(2));
  config.SetRebalanceThreshold(0);
  EXPECT_FALSE(config.RebalancingEnabled());
}

}  // namespace
}  // namespace berth::fairshare
