// Tests of the jobs step (jobs.h): batch jobs: killed, named with services, stored whole, on the
// injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

TEST_F(ReconcilerTest, KilledJobsStopAndTheirWorkersGoToOthers) {
  AddNode("n1", 1);
  ASSERT_TRUE(jobs_.Submit(Job("a", "x", 2, 60)).ok());
  ASSERT_TRUE(jobs_.Submit(Job("b", "x", 1, 60)).ok());
  Settle();
  EXPECT_EQ(Tasks().at("a.1"), "running@n1");
  EXPECT_EQ(Tasks().at("b.1"), "new@");
  ASSERT_TRUE(jobs_.Kill("a").ok());
  Settle();
  EXPECT_EQ(Tasks().at("a.1"), "shutdown@n1");
  EXPECT_EQ(Tasks().at("a.2"), "shutdown@");
  EXPECT_EQ(Tasks().at("b.1"), "running@n1");
  EXPECT_EQ((*WhyTask(store_, "a.2"))["reason"], "job was killed");
}

TEST_F(ReconcilerTest, ServicesAndJobsShareOneNamespace) {
  // Both name their tasks "<name>.<n>"; a service "a" must not take job a's tasks.
  ASSERT_TRUE(jobs_.Submit(Job("a", "x", 1, 1)).ok());
  EXPECT_EQ(services_.Create(Json{{"id", "a"}, {"replicas", 1}}).status().message(),
            "service-or-job 'a' already exists");
  ASSERT_TRUE(services_.Create(Json{{"id", "b"}, {"replicas", 1}}).ok());
  EXPECT_EQ(jobs_.Submit(Job("b", "x", 1, 1)).status().code(), StatusCode::kConflict);
  ASSERT_TRUE(services_.Remove("b").ok());
  EXPECT_TRUE(services_.Create(Json{{"id", "b"}, {"replicas", 1}}).ok());  // the name is free again
}

TEST_F(ReconcilerTest, AJobIsStoredWholeOrNotAtAll) {
  Json job = Job("a", "x", 3, 1);
  job["tasks"][2]["outcome"] = "explode";
  EXPECT_EQ(jobs_.Submit(job).status().message(),
            "tasks[2].outcome: expected complete or fail, got 'explode'");
  EXPECT_EQ(store_.revision(), 0);
  EXPECT_EQ(jobs_.Submit(Json{{"id", "b"}, {"requestor", "x"}, {"tasks", Json::array()}})
                .status()
                .message(),
            "tasks: expected 1 to 100000 tasks");
}

}  // namespace
}  // namespace berth::daemon
