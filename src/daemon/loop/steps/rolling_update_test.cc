// Tests of the rolling update step (rolling_update.h): rolling updates, failure actions,
// start-first and rollback, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"
#include "daemon/loop/steps/lifecycle_cluster.h"

namespace berth::daemon {
namespace {

// 10 replicas, parallelism 2, monitor 1 s, delay 2 s (stop-first): each
// batch replaces two tasks, the next starts 2 s after they have run 1 s,
// and eight tasks run throughout.
TEST_F(LifecycleTest, ARollingUpdateReplacesTwoAtATime) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"},
                 {"replicas", 10},
                 {"update_config", {{"parallelism", 2}, {"delay", "2s"}, {"monitor", "1s"}}}});
  Settle();
  ASSERT_TRUE(services_.Update("web", {{"task", {{"resources", {{"cpu", "100m"}}}}}}).ok());
  Settle();
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v1 running", 8}, {"v2 running", 2}}));
  EXPECT_EQ(UpdateStatus("web")["state"], "updating");
  EXPECT_EQ((*WhyTask(store_, "web.10"))["reason"],
            "runs spec version 1; the rollout of version 2 has not replaced it yet (updating: "
            "update in progress)");
  Advance(seconds(1));  // the batch has run its monitor period; the delay starts
  EXPECT_EQ(Versions("web").at("v2 running"), 2);
  for (int batch = 2; batch <= 5; ++batch) {
    Advance(seconds(2));  // the delay ends: the next batch
    std::map<std::string, int> versions = Versions("web");
    EXPECT_EQ(versions["v2 running"], 2 * batch) << batch;
    EXPECT_EQ(versions["v1 running"] + 2 * batch, 10) << batch;
    Advance(seconds(1));
  }
  const Json status = UpdateStatus("web");
  EXPECT_EQ(status["state"], "completed");
  EXPECT_EQ(status["message"], "update completed");
  EXPECT_EQ(status["replaced"], 10);
}

class FailureActionTest : public LifecycleTest, public testing::WithParamInterface<const char*> {};

// The new version's tasks fail 500 ms after they start, inside the 5 s
// monitor: pause stops after the first batch, continue goes on to the end,
// rollback brings the previous template back as a new version, which the
// eight tasks still on version 1 already run (they stay).
TEST_P(FailureActionTest, TheFailureActionIsTaken) {
  const std::string action = GetParam();
  AddNode("n1");
  CreateService({{"id", "web"},
                 {"replicas", 10},
                 {"restart_policy", {{"condition", "none"}}},
                 {"update_config", {{"parallelism", 2}, {"failure_action", action}}},
                 {"rollback_config", {{"parallelism", 0}}}});
  Settle();
  ASSERT_TRUE(services_.Update("web", {{"run", {{"duration", 0.5}, {"outcome", "fail"}}}}).ok());
  Settle();
  Advance(Duration{500});  // the first two fail
  if (action == "pause") {
    const Json status = UpdateStatus("web");
    EXPECT_EQ(status["state"], "paused");
    EXPECT_TRUE(status["message"].get<std::string>().starts_with(
        "update paused due to failure or early termination of task web."))
        << status;
    Advance(seconds(60));
    EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v1 running", 8}, {"v2 failed", 2}}));
    EXPECT_TRUE((*WhyTask(store_, "web.10"))["reason"].get<std::string>().starts_with(
        "runs spec version 1; the rollout of version 2 has not replaced it yet (paused: update "
        "paused due to failure or early termination of task web."));
  } else if (action == "continue") {
    for (int i = 0; i < 4; ++i) Advance(Duration{500});
    EXPECT_EQ(UpdateStatus("web")["state"], "completed");
    EXPECT_EQ(UpdateStatus("web")["failures"], 10);
    EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v2 failed", 10}}));
  } else {
    Advance(seconds(5));  // the rollback (all at once) runs its monitor period
    const Json service = *services_.Get("web");
    EXPECT_EQ(service["spec_version"], 3);
    EXPECT_EQ(service["update_kind"], "rollback");
    EXPECT_FALSE(service.contains("run"));  // v1's: runs until stopped
    const Json status = UpdateStatus("web");
    EXPECT_EQ(status["state"], "rollback_completed");
    EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v1 running", 8}, {"v2 failed", 2}}));
  }
}

INSTANTIATE_TEST_SUITE_P(EachAction, FailureActionTest,
                         testing::Values("pause", "continue", "rollback"));

// When the task that fails is the last of the rollout, the rollout is
// rolled back, not completed: no further batch of the failing version
// starts, and the rollback's status keeps saying why it started.
TEST_F(LifecycleTest, ARollbackOnTheLastTaskKeepsItsReason) {
  AddNode("n1");
  CreateService({{"id", "web"},
                 {"replicas", 1},
                 {"restart_policy", {{"condition", "none"}}},
                 {"update_config", {{"failure_action", "rollback"}}}});
  Settle();
  ASSERT_TRUE(services_.Update("web", {{"run", {{"duration", 0.5}, {"outcome", "fail"}}}}).ok());
  Settle();
  Advance(Duration{500});  // the only new task fails
  Advance(seconds(5));     // the rollback runs its monitor period
  EXPECT_EQ((*services_.Get("web"))["update_kind"], "rollback");
  const Json status = UpdateStatus("web");
  EXPECT_EQ(status["state"], "rollback_completed");
  EXPECT_TRUE(status["message"].get<std::string>().starts_with(
      "update rolled back due to failure or early termination of task web.1."))
      << status;
  // Its restart condition none keeps the failed task in its slot, as in
  // TheFailureActionIsTaken.
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v2 failed", 1}}));
}

// start-first places the new task while the old one runs, so both hold
// their reservations: on a node with room for one more it runs three at the
// peak; on a full node the new task waits and nothing is over-committed.
// stop-first frees the room first.
TEST_F(LifecycleTest, StartFirstKeepsTheOldTaskUntilTheNewRunsWithinTheNodeLimits) {
  ASSERT_TRUE(nodes_.Register(Json{{"id", "n1"}, {"resources", {{"cpu", 3}}}}).ok());
  CreateService({{"id", "web"},
                 {"replicas", 2},
                 {"task", {{"resources", {{"cpu", 1}}}}},
                 {"update_config", {{"order", "start-first"}, {"monitor", "1s"}}}});
  Settle();
  ASSERT_TRUE(services_.Update("web", {{"task", {{"resources", {{"cpu", "1000m"}}}}}}).ok());
  Settle();  // the new task runs; then its old one stops
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v1 running", 1}, {"v2 running", 1}}));
  EXPECT_EQ(Task(IdOf("web.1", 1))["message"],
            "replaced by " + IdOf("web.1", 2) + " (start-first)");
  Advance(seconds(1));
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v2 running", 2}}));
  // A full node: 3 tasks of 1 CPU on 3 CPUs.
  ASSERT_TRUE(services_.Update("web", {{"replicas", 3}}).ok());
  Settle();
  ASSERT_TRUE(services_.Update("web", {{"task", {{"resources", {{"cpu", 1}}}}}}).ok());
  Settle();
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v2 running", 3}, {"v3 pending", 1}}));
  EXPECT_EQ(Task(IdOf("web.1", 3))["message"],
            "no suitable node (insufficient resources on 1 node)");
  // A restarted berthd takes the waiting replacement as in flight: it makes
  // no second one (parallelism 1).
  {
    Reconciler restarted{store_, nullptr, &clock_, options_};
    Result<PassSummary> pass = restarted.RunPass(clock_.Now());
    ASSERT_TRUE(pass.ok()) << pass.status().message();
    EXPECT_EQ(pass->created, 0);
    EXPECT_EQ(pass->stopped, 0);
  }
  // stop-first instead: the old task stops, its replacement takes its room.
  ASSERT_TRUE(services_
                  .Update("web", {{"update_config", {{"order", "stop-first"}}},
                                  {"task", {{"resources", {{"cpu", "1"}}}}}})
                  .ok());
  Settle();
  Advance(seconds(5));
  Advance(seconds(5));
  Advance(seconds(5));
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v4 running", 3}}));
}

// `service rollback`: the previous template comes back as a new version,
// rolled out with rollback_config; a service that never changed has none.
// Only the task on version 2 is replaced: the two still on version 1 run
// the restored template already.
TEST_F(LifecycleTest, RollbackRestoresThePreviousTemplate) {
  AddNode("n1");
  CreateService({{"id", "web"},
                 {"replicas", 3},
                 {"task", {{"resources", {{"cpu", "100m"}}}}},
                 {"rollback_config", {{"parallelism", 0}, {"monitor", "0s"}}}});
  Settle();
  EXPECT_EQ(services_.Rollback("web").status().message(),
            "service 'web' has no previous spec to roll back to");
  ASSERT_TRUE(services_.Update("web", {{"task", {{"resources", {{"cpu", "200m"}}}}}}).ok());
  Settle();
  ASSERT_TRUE(services_.Rollback("web").ok());
  Settle();
  const Json service = *services_.Get("web");
  EXPECT_EQ(service["spec_version"], 3);
  EXPECT_EQ(service["task"], (Json{{"resources", {{"cpu", "100m"}}}}));
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v1 running", 2}, {"v3 running", 1}}));
  EXPECT_EQ(UpdateStatus("web")["state"], "rollback_completed");
}

// A rollback compares templates, not version numbers: with parallelism 1
// only ticker.1 got version 2 and failed; the rollback to version 3 (equal
// to version 1) replaces ticker.1 and leaves ticker.2, still on version 1,
// running as the same task. A later update replaces both again.
TEST_F(LifecycleTest, ARollbackLeavesTasksThatNeverRanTheBadSpec) {
  AddNode("n1");
  CreateService({{"id", "ticker"},
                 {"replicas", 2},
                 {"update_config", {{"parallelism", 1}, {"failure_action", "rollback"}}},
                 {"rollback_config", {{"parallelism", 1}, {"monitor", "1s"}}}});
  Settle();
  const std::string second = IdOf("ticker.2", 1);
  ASSERT_TRUE(services_.Update("ticker", {{"run", {{"duration", 0.5}, {"outcome", "fail"}}}}).ok());
  Settle();
  Advance(Duration{500});  // ticker.1's version 2 fails: the rollback starts
  Advance(seconds(1));
  Advance(seconds(1));
  EXPECT_EQ((*services_.Get("ticker"))["spec_version"], 3);
  EXPECT_EQ(UpdateStatus("ticker")["state"], "rollback_completed");
  EXPECT_EQ(Task("ticker.2")["id"], second);
  EXPECT_EQ(Task(second)["state"], "running");
  EXPECT_EQ(Versions("ticker"), (std::map<std::string, int>{{"v1 running", 1}, {"v3 running", 1}}));
  ASSERT_TRUE(services_.Update("ticker", {{"task", {{"resources", {{"cpu", "100m"}}}}}}).ok());
  Settle();
  for (int i = 0; i < 3; ++i) Advance(seconds(5));
  EXPECT_EQ(Versions("ticker"), (std::map<std::string, int>{{"v4 running", 2}}));
}

TEST_F(ReconcilerTest, ANewSpecVersionReplacesTheTasks) {
  AddNode("n1", 8);
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 2}, {"task", {{"resources", {{"cpu", 1}}}}}})
          .ok());
  Settle();
  ASSERT_TRUE(services_.Update("web", Json{{"task", {{"resources", {{"cpu", 2}}}}}}).ok());
  Settle();  // one task at a time (parallelism 1), each monitored for 5 s
  clock_.Advance(std::chrono::seconds(5));
  Settle();
  const Json tasks = (*ListTasks(store_, "web"))["tasks"];
  int running_v2 = 0;
  for (const Json& t : tasks) running_v2 += t["state"] == "running" && t["spec_version"] == 2;
  EXPECT_EQ(running_v2, 2);
  for (const Json& t : tasks) {
    if (t["spec_version"] == 1) {
      EXPECT_EQ(t["state"], "shutdown") << t.dump();
    }
  }
}

}  // namespace
}  // namespace berth::daemon
