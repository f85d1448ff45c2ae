// Tests of the restarts step (restarts.h): the restart policy: conditions, delays, attempts within
// a window, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"
#include "daemon/loop/steps/lifecycle_cluster.h"

namespace berth::daemon {
namespace {

// Each restart condition restarts what Docker's does; the new task takes
// the failed one's slot after the delay; a task not restarted keeps its
// slot (desired complete) with the reason.
TEST_F(LifecycleTest, EachRestartConditionAndItsDelay) {
  AddNode("n1");
  const Json fail = {{"duration", 10}, {"outcome", "fail"}};
  const Json complete = {{"duration", 10}, {"outcome", "complete"}};
  CreateService({{"id", "any"}, {"replicas", 1}, {"run", fail}});  // Docker's defaults
  CreateService({{"id", "none"},
                 {"replicas", 1},
                 {"run", fail},
                 {"restart_policy", {{"condition", "none"}}}});
  CreateService({{"id", "onfail-ok"},
                 {"replicas", 1},
                 {"run", complete},
                 {"restart_policy", {{"condition", "on-failure"}}}});
  CreateService({{"id", "onfail-bad"},
                 {"replicas", 1},
                 {"run", fail},
                 {"restart_policy", {{"condition", "on-failure"}, {"delay", "2s"}}}});
  Settle();
  Advance(seconds(10));  // every task ends
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"any.1#1", "failed@n1"},
                                                         {"any.1#2", "new@"},
                                                         {"none.1", "failed@n1"},
                                                         {"onfail-bad.1#1", "failed@n1"},
                                                         {"onfail-bad.1#2", "new@"},
                                                         {"onfail-ok.1", "complete@n1"}}));
  const Json kept = Task("none.1");
  EXPECT_EQ(kept["desired_state"], "complete");
  EXPECT_EQ(kept["message"],
            "failed after 10000 ms (simulated); not restarted: restart condition none");
  EXPECT_EQ(Task("onfail-ok.1")["message"],
            "completed after 10000 ms (simulated); not restarted: it completed and the restart "
            "condition is on-failure");
  EXPECT_EQ(Task("any.1")["message"], "restarting " + IdOf("any.1", 1) +
                                          " (failed) after the restart delay, at "
                                          "2026-01-01T00:00:15Z");
  Advance(seconds(2));  // on-failure's 2 s delay ends; any's 5 s do not
  EXPECT_EQ(Tasks().at("onfail-bad.1#2"), "running@n1");
  EXPECT_EQ(Tasks().at("any.1#2"), "new@");
  Advance(seconds(3));
  EXPECT_EQ(Tasks().at("any.1#2"), "running@n1");
}

// max_attempts within the window: the slot restarts that many times, then
// its task stays ended with the reason; nothing refills the slot.
TEST_F(LifecycleTest, MaxAttemptsStopRestartsWithinTheWindow) {
  AddNode("n1");
  CreateService({{"id", "flaky"},
                 {"replicas", 1},
                 {"run", {{"duration", 1}, {"outcome", "fail"}}},
                 {"restart_policy", {{"delay", "0s"}, {"max_attempts", 2}, {"window", "1m"}}}});
  Settle();
  for (int i = 0; i < 3; ++i) Advance(seconds(1));
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"flaky.1#1", "failed@n1"},
                                                         {"flaky.1#2", "failed@n1"},
                                                         {"flaky.1#3", "failed@n1"}}));
  EXPECT_EQ(Task("flaky.1")["message"],
            "failed after 1000 ms (simulated); not restarted: its slot restarted 2 times within "
            "1m0s (restart max attempts 2)");
  Advance(seconds(120));
  EXPECT_EQ(Tasks().size(), 3u);  // a decision taken stays taken
}

// A service removed and created again under its name starts clean: new
// ids, none of the old tasks listed under it, and the old ones deleted.
TEST_F(LifecycleTest, ARecreatedServiceStartsCleanWithNewIds) {
  AddNode("n1");
  CreateService({{"id", "api"}, {"replicas", 2}});
  Settle();
  std::set<std::string> old_ids;
  const Json before = (*ListTasks(store_, "api"))["tasks"];
  for (const Json& t : before) old_ids.insert(t["id"]);
  ASSERT_TRUE(services_.Remove("api").ok());
  CreateService({{"id", "api"}, {"replicas", 2}});  // before any pass sees the removal
  EXPECT_TRUE((*ListTasks(store_, "api"))["tasks"].empty());
  Settle();
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{{"api.1", "running@n1"}, {"api.2", "running@n1"}}));
  const Json after = (*ListTasks(store_, ""))["tasks"];
  for (const Json& t : after) EXPECT_FALSE(old_ids.contains(t["id"])) << t["id"];
}

TEST_F(ReconcilerTest, FailingServiceTasksAreReplacedAndFeedTheFaultyNodeRule) {
  AddNode("n1", 4);
  AddNode("n2", 4);
  Result<Json> created = services_.Create(Json{{"id", "flaky"},
                                               {"replicas", 1},
                                               {"restart_policy", {{"delay", "0s"}}},
                                               {"run", {{"duration", 1}, {"outcome", "fail"}}}});
  ASSERT_TRUE(created.ok()) << created.status().message();
  std::vector<std::string> nodes;  // where each attempt ran
  std::set<std::string> ids;
  std::string first;
  for (int attempt = 1; attempt <= 6; ++attempt) {
    Settle();
    const Json task = *GetTask(store_, "flaky.1");  // the slot's newest task
    ASSERT_EQ(task["state"], "running") << task.dump();
    ASSERT_TRUE(ids.insert(task["id"]).second) << "a new task each time";
    if (first.empty()) first = task["id"];
    nodes.push_back(task["node"]);
    clock_.Advance(std::chrono::seconds(1));  // it fails; a replacement follows
  }
  // Equal nodes go to the smaller id until n1 has failed 5 times within 5
  // minutes (docs/placement.md, "The node order"); then it sorts last.
  EXPECT_EQ(nodes, (std::vector<std::string>{"n1", "n1", "n1", "n1", "n1", "n2"}));
  EXPECT_EQ((*WhyTask(store_, first))["reason"], "failed after 1000 ms (simulated)");
}

}  // namespace
}  // namespace berth::daemon
