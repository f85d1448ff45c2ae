// Tests of the task runs step (task_runs.h): the executor part of a pass: tasks start, end, and
// leave removed nodes, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

TEST_F(ReconcilerTest, ReplicasAreCreatedPlacedAndStarted) {
  AddNode("n1", 4);
  AddNode("n2", 4);
  Result<Json> created = services_.Create(
      Json{{"id", "web"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", 1}}}}}});
  ASSERT_TRUE(created.ok()) << created.status().message();
  Result<PassSummary> first = reconciler_.RunPass(*ParseRfc3339("2026-01-01T00:00:00Z"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->created, 3);
  EXPECT_EQ(first->assigned, 3);
  EXPECT_EQ(Settle(), 1);  // the simulated executor starts them, then nothing changes
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{
                {"web.1", "running@n1"}, {"web.2", "running@n2"}, {"web.3", "running@n1"}}));
  EXPECT_EQ((*WhyTask(store_, "web.1"))["reason"], "started by the simulated executor");
}

TEST_F(ReconcilerTest, TasksOfARemovedNodeAreOrphanedAndReplaced) {
  AddNode("n1", 8);
  ASSERT_TRUE(services_.Create(Json{{"id", "web"}, {"replicas", 1}}).ok());
  Settle();
  AddNode("n2", 8);
  ASSERT_TRUE(nodes_.Remove("n1").ok());
  Settle();
  // The replacement is a new task in the slot: the orphan's record stays.
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"web.1#1", "orphaned@n1"},
                                                         {"web.1#2", "running@n2"}}));
}

}  // namespace
}  // namespace berth::daemon
