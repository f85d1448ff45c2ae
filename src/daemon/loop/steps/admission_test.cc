// Tests of the admission step (admission.h): fair-share admission of jobs by class, on the injected
// clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

TEST_F(ReconcilerTest, JobsAreAdmittedByClassThenPlacedRunAndCompleted) {
  for (int n = 1; n <= 4; ++n) AddNode("n" + std::to_string(n), 1);  // W = 4, one task each
  Result<Json> classes = classes_.Update(
      Json{{"classes", {{"land", 50}, {"diff", 50}}},
           {"requestors",
            Json::array({Json::array({"^land", "land"}), Json::array({"^diff", "diff"})})}});
  ASSERT_TRUE(classes.ok()) << classes.status().message();
  ASSERT_TRUE(jobs_.Submit(Job("a", "land-ci", 4, 10)).ok());
  ASSERT_TRUE(jobs_.Submit(Job("b", "diff-ci", 4, 10)).ok());
  Settle();
  Json tasks = (*ListTasks(store_, ""))["tasks"];
  EXPECT_EQ(StatesOf(tasks, "a"), (std::map<std::string, int>{{"new", 2}, {"running", 2}}));
  EXPECT_EQ(StatesOf(tasks, "b"), (std::map<std::string, int>{{"new", 2}, {"running", 2}}));
  EXPECT_EQ((*WhyTask(store_, "a.3"))["reason"],
            "waiting for admission: class 'land' (requestor 'land-ci') runs 2 of its entitlement "
            "of 2 (50% of 4 workers), 2 of its tasks wait; 0 workers idle");
  clock_.Advance(std::chrono::seconds(10));  // the first four complete, the rest start
  Settle();
  tasks = (*ListTasks(store_, ""))["tasks"];
  EXPECT_EQ(StatesOf(tasks, "a"), (std::map<std::string, int>{{"complete", 2}, {"running", 2}}));
  EXPECT_EQ(StatesOf(tasks, "b"), (std::map<std::string, int>{{"complete", 2}, {"running", 2}}));
  const Json recorded = Json::parse((*store_.Get("duration", "a.1"))->body);
  EXPECT_EQ(recorded, (Json{{"count", 1}, {"total_ms", 10'000}}));
}

// A class below its entitlement gets the next free worker, ahead of a job of
// a class at its entitlement that arrived earlier; `task why` tells a
// waiting task's class, its running count against its entitlement, and the
// idle workers.
TEST_F(ReconcilerTest, AClassBelowItsEntitlementGetsTheNextFreeWorker) {
  AddNode("n1", 1);
  AddNode("n2", 1);  // W = 2: one worker for each class
  ASSERT_TRUE(classes_
                  .Update(Json{{"classes", {{"land", 50}, {"diff", 50}}},
                               {"requestors", Json::array({Json::array({"^land", "land"}),
                                                           Json::array({"^diff", "diff"})})}})
                  .ok());
  Json a = Job("a", "land-ci", 2, 100);
  a["tasks"][0]["duration"] = 10;
  ASSERT_TRUE(jobs_.Submit(a).ok());  // land borrows diff's idle worker
  Settle();
  ASSERT_TRUE(jobs_.Submit(Job("c", "land-ci", 1, 10)).ok());
  ASSERT_TRUE(jobs_.Submit(Job("b", "diff-ci", 1, 10)).ok());
  Settle();
  EXPECT_EQ(Tasks().at("a.1"), "running@n1");
  EXPECT_EQ(Tasks().at("a.2"), "running@n2");
  EXPECT_EQ((*WhyTask(store_, "b.1"))["reason"],
            "waiting for admission: class 'diff' (requestor 'diff-ci') runs 0 of its entitlement "
            "of 1 (50% of 2 workers), 1 of its tasks wait; 0 workers idle");
  clock_.Advance(std::chrono::seconds(10));  // a.1 ends: one worker frees
  Settle();
  EXPECT_EQ(Tasks().at("b.1"), "running@n1");  // diff was below its entitlement
  EXPECT_EQ(Tasks().at("c.1"), "new@");
  EXPECT_EQ((*WhyTask(store_, "c.1"))["reason"],
            "waiting for admission: class 'land' (requestor 'land-ci') runs 1 of its entitlement "
            "of 1 (50% of 2 workers), 1 of its tasks wait; 0 workers idle");
}

// The loop takes a configuration changed after it started from the store's
// change feed, at its next pass.
TEST_F(ReconcilerTest, ClassesChangedWhileTheLoopRunsApplyAtItsNextPass) {
  AddNode("n1", 1);
  AddNode("n2", 1);
  ASSERT_TRUE(jobs_.Submit(Job("a", "land-ci", 3, 100)).ok());
  Settle();  // admitted under the defaults: one class, "default"
  EXPECT_EQ((*WhyTask(store_, "a.3"))["reason"],
            "waiting for admission: class 'default' (requestor 'land-ci') runs 2 of its "
            "entitlement of 2 (100% of 2 workers), 1 of its tasks wait; 0 workers idle");
  ASSERT_TRUE(classes_
                  .Update(Json{{"classes", {{"land", 50}, {"diff", 50}}},
                               {"requestors", Json::array({Json::array({"^land", "land"})})}})
                  .ok());
  Settle();
  EXPECT_EQ((*WhyTask(store_, "a.3"))["reason"],
            "waiting for admission: class 'land' (requestor 'land-ci') runs 2 of its entitlement "
            "of 1 (50% of 2 workers), 1 of its tasks wait; 0 workers idle");
}

TEST_F(ReconcilerTest, ABadClassConfigurationLeavesThePreviousInForce) {
  ASSERT_TRUE(classes_.Update(Json{{"classes", {{"land", 60}, {"diff", 40}}}}).ok());
  Result<Json> bad =
      classes_.Update(Json{{"requestors", Json::array({Json::array({"(", "land"})})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("requestors", 0), 0u) << bad.status().message();
  EXPECT_EQ((*classes_.Get())["classes"], (Json{{"land", 60}, {"diff", 40}}));
}

}  // namespace
}  // namespace berth::daemon
