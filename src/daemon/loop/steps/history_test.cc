// Tests of the history step (history.h): ended tasks beyond the history
// limit are deleted per slot, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/steps/lifecycle_cluster.h"

namespace berth::daemon {
namespace {

ReconcilerOptions HistoryLimit(int64_t limit) {
  ReconcilerOptions options;
  options.task_history_limit = limit;
  return options;
}

class HistoryTest : public testing::Test, public LifecycleCluster {
 public:
  HistoryTest() : LifecycleCluster(HistoryLimit(2)) {}
};

// A slot whose task keeps failing keeps its newest task and the 2 most
// recently ended ones; another slot's history is its own; a removed
// service keeps none.
TEST_F(HistoryTest, EndedTasksBeyondTheLimitArePrunedPerSlot) {
  AddNode("n1");
  CreateService({{"id", "flaky"},
                 {"replicas", 2},
                 {"run", {{"duration", 1}, {"outcome", "fail"}}},
                 {"restart_policy", {{"delay", "0s"}}}});
  Settle();
  for (int i = 0; i < 6; ++i) Advance(seconds(1));  // each second, every task fails
  std::map<std::string, int> ended, meant;
  for (const auto& [name, state] : Tasks("flaky")) {
    const std::string slot = name.substr(0, name.find('#'));
    (state.starts_with("failed@") ? ended : meant)[slot]++;
  }
  EXPECT_EQ(ended, (std::map<std::string, int>{{"flaky.1", 2}, {"flaky.2", 2}}));
  EXPECT_EQ(meant, (std::map<std::string, int>{{"flaky.1", 1}, {"flaky.2", 1}}));
  ASSERT_TRUE(services_.Remove("flaky").ok());
  Settle();
  EXPECT_TRUE(Tasks("flaky").empty());
}

}  // namespace
}  // namespace berth::daemon
