#include "orchestrator/orchestrator.h"

#include <gtest/gtest.h>

#include <set>

namespace berth::orchestrator {
namespace {

TEST(Orchestrator, GlobalTaskIdsNumberLaterTasksOnTheSameNode) {
  std::set<std::string> taken;
  auto is_taken = [&](const std::string& id) { return taken.contains(id); };
  EXPECT_EQ(GlobalTaskId("mon", "n1", is_taken), "mon.n1");
  taken = {"mon.n1", "mon.n1.2"};
  EXPECT_EQ(GlobalTaskId("mon", "n1", is_taken), "mon.n1.3");
}

TEST(Orchestrator, ReplicaNumbers) {
  EXPECT_EQ(ReplicaNumber("web.12"), 12);
  EXPECT_EQ(ReplicaNumber("web.n1"), -1);
  EXPECT_EQ(ReplicaNumber("web."), -1);
  EXPECT_EQ(ReplicaNumber("web"), -1);
  EXPECT_EQ(ReplicaNumber("web.99999999999"), -1);
}

// Pending tasks go first, then the highest replica numbers.
TEST(Orchestrator, ScaleDownStopsPendingThenHighestNumbers) {
  const std::vector<ScaleDownCandidate> tasks = {
      {"web.1", false}, {"web.7", false}, {"web.2", true}, {"web.10", false}, {"web.3", false}};
  EXPECT_EQ(ChooseScaleDown(tasks, 3), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(ChooseScaleDown(tasks, 1), (std::vector<size_t>{2, 3, 1, 4}));
  EXPECT_TRUE(ChooseScaleDown(tasks, 5).empty());
}

TEST(Orchestrator, RunnableMeansNotEndedAndMeantToRun) {
  EXPECT_TRUE(Runnable(TaskState::kPending, TaskState::kRunning));
  EXPECT_TRUE(Runnable(TaskState::kRunning, TaskState::kRunning));
  EXPECT_FALSE(Runnable(TaskState::kFailed, TaskState::kRunning));
  EXPECT_FALSE(Runnable(TaskState::kRunning, TaskState::kShutdown));
}

}  // namespace
}  // namespace berth::orchestrator
