// Tests of the rebalance step (rebalance.h): moving tasks onto nodes that join, never below the
// running replicas, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/steps/lifecycle_cluster.h"

namespace berth::daemon {
namespace {

// `service rebalance` after a node joined (docs/placement.md,
// "Rebalancing"): only the tasks beyond the engine's spread move, one at a
// time as update_config says, start-first although its order is
// stop-first, so six tasks run after every pass; the others keep running
// untouched. Joining alone moves nothing for a "manual" service.
TEST_F(LifecycleTest, ARebalanceMovesOnlyTheTasksBeyondTheEnginesSpread) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"},
                 {"replicas", 6},
                 {"update_config", {{"parallelism", 1}, {"monitor", "1s"}, {"delay", "2s"}}}});
  Settle();
  ASSERT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 3}, {"n2", 3}}));
  const std::set<std::string> before = IdsByState("web")["running"];
  AddNode("n3");
  Settle();
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 3}, {"n2", 3}}));

  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 6, 7));
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 2}, {"n2", 2}, {"n3", 2}}));
  const Json status = UpdateStatus("web");
  EXPECT_EQ(status["state"], "completed");
  EXPECT_EQ(status["message"], "rebalance completed");
  EXPECT_EQ(status["replaced"], 2);
  std::set<std::string> moved, stayed;
  const std::set<std::string> after = IdsByState("web")["running"];
  for (const std::string& id : after) (before.contains(id) ? stayed : moved).insert(id);
  EXPECT_EQ(stayed.size(), 4u);
  ASSERT_EQ(moved.size(), 2u);
  // The delay: the second move started monitor + delay after the first.
  std::vector<Timestamp> started;
  for (const std::string& id : moved)
    started.push_back(*ParseRfc3339(Task(id)["started_at"].get<std::string>()));
  std::sort(started.begin(), started.end());
  EXPECT_GE(started[1] - started[0], seconds(3));
  for (const std::string& id : moved) {
    EXPECT_EQ(Task(id)["spec_version"], 2);
    EXPECT_EQ(Task(id)["node"], "n3");
  }
  for (const std::string& id : stayed) {
    EXPECT_EQ(Task(id)["spec_version"], 1);
    EXPECT_EQ((*WhyTask(store_, id))["reason"].get<std::string>().find("not replaced"),
              std::string::npos);
  }
  const Json service = *services_.Get("web");
  EXPECT_EQ(service["update_kind"], "rebalance");
  EXPECT_EQ(service["template_version"], 1);
  EXPECT_FALSE(service.contains("previous_task"));
  // Balanced already: a second rebalance moves nothing and says so.
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 6, 6));
  EXPECT_EQ(UpdateStatus("web")["replaced"], 0);
  EXPECT_EQ(UpdateStatus("web")["message"], "rebalance completed");
}

// The target is the engine's, preferences and all: spread over zones, a
// new zone's node takes half of the tasks (parallelism 0: all at once).
TEST_F(LifecycleTest, ARebalanceFollowsThePlacementPreferences) {
  AddNode("n1", {{"az", "a"}});
  AddNode("n2", {{"az", "a"}});
  CreateService({{"id", "web"},
                 {"replicas", 4},
                 {"task", {{"preferences", {{{"spread", "node.labels.az"}}}}}},
                 {"update_config", {{"parallelism", 0}, {"monitor", "0s"}}}});
  Settle();
  AddNode("n3", {{"az", "b"}});
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 4, 6));
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 1}, {"n2", 1}, {"n3", 2}}));
  EXPECT_EQ(UpdateStatus("web")["replaced"], 2);
}

// A pass that visits every task (here: another service's new version)
// while a move is inside its monitor period finds the pair again: nothing
// else stops, and no second replacement is made.
TEST_F(LifecycleTest, AFullVisitDuringAMoveKeepsThePair) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"}, {"replicas", 4}, {"update_config", {{"monitor", "5s"}}}});
  CreateService({{"id", "api"}, {"replicas", 1}});
  Settle();
  AddNode("n3");
  ASSERT_TRUE(services_.Rebalance("web").ok());
  Settle();  // the first replacement runs, inside its monitor period
  ASSERT_EQ(RunningPerNode("web").at("n3"), 1);
  ASSERT_TRUE(services_.Update("api", {{"force", true}}).ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 4, 5));
  EXPECT_EQ(UpdateStatus("web")["replaced"], 1);
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 1}, {"n2", 2}, {"n3", 1}}));
}

// A node that takes no tasks (paused) keeps what it runs: the target leaves
// its tasks where they are and spreads the others.
TEST_F(LifecycleTest, APausedNodeKeepsItsTasks) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"}, {"replicas", 4}, {"update_config", {{"monitor", "0s"}}}});
  Settle();
  UpdateNode("n2", {{"availability", "pause"}});
  AddNode("n3");
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 4, 5));
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 1}, {"n2", 2}, {"n3", 1}}));
}

// Property over random clusters: whatever the sizes, joins and
// parallelism, no pass runs fewer than the replicas or more than
// parallelism extra (0: every mover at once), and a plain spread ends even
// (the most and the fewest tasks on a node differ by at most one).
TEST(RebalanceProperty, NeverFewerAndEvenAfterNodesJoin) {
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed);
    const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution(lo, hi)(rng); };
    const int first = pick(1, 4), joining = pick(1, 4), replicas = pick(1, 16),
              parallelism = pick(0, 2);
    LifecycleCluster c;
    for (int n = 1; n <= first; ++n) c.AddNode("n" + std::to_string(n));
    c.CreateService({{"id", "web"},
                     {"replicas", replicas},
                     {"update_config", {{"parallelism", parallelism}, {"monitor", "1s"}}}});
    c.Settle();
    for (int n = first + 1; n <= first + joining; ++n) c.AddNode("n" + std::to_string(n));
    ASSERT_TRUE(c.services_.Rebalance("web").ok());
    const int most = parallelism == 0 ? 2 * replicas : replicas + parallelism;
    ASSERT_TRUE(c.RollOutCheckingEachPass("web", replicas, most)) << "seed " << seed;
    std::vector<int> counts;
    const std::map<std::string, int> per_node = c.RunningPerNode("web");
    for (int n = 1; n <= first + joining; ++n) {
      const auto it = per_node.find("n" + std::to_string(n));
      counts.push_back(it == per_node.end() ? 0 : it->second);
    }
    EXPECT_LE(*std::max_element(counts.begin(), counts.end()) -
                  *std::min_element(counts.begin(), counts.end()),
              1)
        << "seed " << seed << ": " << first << " nodes + " << joining << ", " << replicas
        << " replicas, parallelism " << parallelism << "; " << Json(per_node).dump() << " "
        << c.UpdateStatus("web").dump();
  }
}

// A rebalance keeps the template (and what rollback returns to): its tasks
// of the version before it run the current template and are not "waiting
// for the rollout"; a global service and a service whose rollout is paused
// refuse it.
TEST_F(LifecycleTest, ARebalanceKeepsTheTemplateAndRefusesWhatItCannotDo) {
  AddNode("n1");
  CreateService({{"id", "web"},
                 {"replicas", 2},
                 {"task", {{"resources", {{"cpu", "100m"}}}}},
                 {"update_config", {{"monitor", "0s"}}}});
  CreateService({{"id", "mon"}, {"mode", "global"}});
  Settle();
  ASSERT_TRUE(services_.Update("web", {{"task", {{"resources", {{"cpu", "200m"}}}}}}).ok());
  EXPECT_EQ(services_.Rebalance("web").status().message(),
            "service 'web': the rollout of spec version 2 has not started yet; rebalance it once "
            "that completes");
  Settle();
  AddNode("n2");
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 2, 3));
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 1}, {"n2", 1}}));
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v2 running", 1}, {"v3 running", 1}}));
  EXPECT_EQ(UpdateStatus("web")["message"], "rebalance completed");
  ASSERT_TRUE(services_.Rollback("web").ok());
  Settle();
  Advance(seconds(5));  // rollback_config: one at a time, monitored for 5 s
  EXPECT_EQ((*services_.Get("web"))["task"], (Json{{"resources", {{"cpu", "100m"}}}}));
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v4 running", 2}}));

  EXPECT_EQ(services_.Rebalance("mon").status().message(),
            "service 'mon' is global: it runs one task on every node, so it has nothing to "
            "rebalance");
  EXPECT_EQ(services_.Rebalance("nothing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(services_.Update("web", {{"rebalance", "sometimes"}}).status().message(),
            "rebalance: rebalance 'sometimes' is not one of manual, on-join");
  // A paused rollout (its new tasks fail on n1 and n2) stands in the way.
  executor_.failing = {"n1", "n2"};
  ASSERT_TRUE(
      services_.Update("web", {{"force", true}, {"update_config", {{"monitor", "5s"}}}}).ok());
  Settle();
  ASSERT_EQ(UpdateStatus("web")["state"], "paused");
  const Result<Json> refused = services_.Rebalance("web");
  EXPECT_EQ(refused.status().code(), StatusCode::kConflict);
  EXPECT_TRUE(
      refused.status().message().starts_with("service 'web' has a paused rollout (paused: "))
      << refused.status().message();
}

class RebalanceFailureTest : public LifecycleTest,
                             public testing::WithParamInterface<const char*> {};

// A move that fails takes the failure action; rollback has no previous
// placement to go back to, so it pauses. The task it was to replace keeps
// running (start-first).
// The failed replacement is not restarted beside the task it was to
// replace (restart condition any or none alike). A paused rebalance may be
// rebalanced again.
TEST_P(RebalanceFailureTest, AFailedMovePausesAndTheOldTaskRunsOn) {
  const bool pause = std::string(GetParam()) == "pause";
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"},
                 {"replicas", 4},
                 {"restart_policy", {{"condition", pause ? "any" : "none"}}},
                 {"update_config", {{"failure_action", GetParam()}}}});
  Settle();
  const std::set<std::string> before = IdsByState("web")["running"];
  AddNode("n3");
  executor_.failing = {"n3"};
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 4, 5));
  EXPECT_EQ(IdsByState("web")["running"], before);
  const Json status = UpdateStatus("web");
  EXPECT_EQ(status["state"], "paused");
  EXPECT_TRUE(status["message"].get<std::string>().starts_with(
      "rebalance paused due to failure or early termination of task web."))
      << status;
  EXPECT_EQ((*services_.Get("web"))["spec_version"], 2);  // not rolled back
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 2}, {"n2", 2}}));
  Advance(seconds(60));  // no restart of the failed move comes later either
  EXPECT_EQ(IdsByState("web")["running"], before);
  executor_.failing.clear();
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 4, 5));
  EXPECT_EQ(UpdateStatus("web")["message"], "rebalance completed");
  EXPECT_EQ(RunningPerNode("web").at("n3"), 1);
}

// A paused rebalance may be rebalanced again only once its replacements
// in flight have landed: a new version would split their start-first pairs.
TEST_F(LifecycleTest, APausedRebalanceWaitsForItsMovesInFlight) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"},
                 {"replicas", 4},
                 {"restart_policy", {{"condition", "none"}}},
                 {"update_config", {{"parallelism", 2}, {"monitor", "5s"}}}});
  Settle();
  AddNode("n3");
  AddNode("n4");
  executor_.failing = {"n3"};
  ASSERT_TRUE(services_.Rebalance("web").ok());
  Settle();  // the move to n3 fails at once; the one to n4 is in its monitor period
  ASSERT_EQ(UpdateStatus("web")["state"], "paused");
  ASSERT_EQ(UpdateStatus("web")["in_flight"], 1);
  EXPECT_EQ(services_.Rebalance("web").status().code(), StatusCode::kConflict);
  Advance(seconds(5));
  ASSERT_EQ(UpdateStatus("web")["in_flight"], 0);
  executor_.failing.clear();
  ASSERT_TRUE(services_.Rebalance("web").ok());
  ASSERT_TRUE(RollOutCheckingEachPass("web", 4, 6));
  EXPECT_EQ(RunningPerNode("web"),
            (std::map<std::string, int>{{"n1", 1}, {"n2", 1}, {"n3", 1}, {"n4", 1}}));
}

INSTANTIATE_TEST_SUITE_P(PauseAndRollback, RebalanceFailureTest,
                         testing::Values("pause", "rollback"));

// "rebalance": "on-join": a node that joins (added ready, or made active
// again) starts a rebalance when the engine would now place some tasks on
// it; a node that changes nothing for the service (here: one its
// constraint rules out) makes no new version; "manual" services and global
// ones stay as they are.
TEST_F(LifecycleTest, OnJoinRebalancesWhenANodeJoinsAndOnlyIfSomethingMoves) {
  const Json zone_a = {{"zone", "a"}};
  AddNode("n1", zone_a);
  AddNode("n2", zone_a);
  CreateService({{"id", "api"},
                 {"replicas", 4},
                 {"task", {{"constraints", {"node.labels.zone==a"}}}},
                 {"rebalance", "on-join"},
                 {"update_config", {{"parallelism", 2}, {"monitor", "0s"}}}});
  CreateService({{"id", "web"}, {"replicas", 4}});
  EXPECT_EQ(services_.Create({{"id", "mon"}, {"mode", "global"}, {"rebalance", "on-join"}})
                .status()
                .message(),
            "rebalance: on-join is for replicated services: a global service runs one task on "
            "every node");
  CreateService({{"id", "mon"}, {"mode", "global"}});
  Settle();
  AddNode("n3", zone_a);
  AddNode("n4", zone_a);
  ASSERT_TRUE(RollOutCheckingEachPass("api", 4, 6));
  const std::map<std::string, int> one_each = {{"n1", 1}, {"n2", 1}, {"n3", 1}, {"n4", 1}};
  EXPECT_EQ(RunningPerNode("api"), one_each);
  EXPECT_EQ(UpdateStatus("api")["message"], "rebalance completed");
  EXPECT_EQ((*services_.Get("api"))["spec_version"], 2);
  EXPECT_EQ(RunningPerNode("web"), (std::map<std::string, int>{{"n1", 2}, {"n2", 2}}));
  EXPECT_EQ((*services_.Get("web"))["spec_version"], 1);
  EXPECT_EQ((*services_.Get("mon"))["spec_version"], 1);
  AddNode("n5");  // not in zone a: nothing of api would go there
  Settle();
  EXPECT_EQ((*services_.Get("api"))["spec_version"], 2);
  // Drained, n1's task goes elsewhere; active again, n1 joins again.
  ASSERT_TRUE(nodes_.Drain("n1").ok());
  Settle();
  ASSERT_EQ(RunningPerNode("api").count("n1"), 0u);
  UpdateNode("n1", {{"availability", "active"}});
  ASSERT_TRUE(RollOutCheckingEachPass("api", 4, 6));
  EXPECT_EQ((*services_.Get("api"))["spec_version"], 3);
  EXPECT_EQ(RunningPerNode("api"), one_each);
}

}  // namespace
}  // namespace berth::daemon
