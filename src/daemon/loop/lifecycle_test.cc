// The task lifecycle of berthd's control loop (issue 15), on the injected
// clock and the in-memory store: drained, down and relabelled nodes move
// their tasks; the restart policy; ids unique across a service's removal
// and re-creation; rolling updates, rollbacks and rebalances.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "daemon/daemon_test_support.h"
#include "daemon/loop/reconciler.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "daemon/registry/task_views.h"
#include "executor/simulated_executor.h"
#include "orchestrator/orchestrator.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

using api::Json;
using std::chrono::seconds;

// The simulated executor, except that a task started on one of `failing`
// fails as soon as a pass checks it.
class FailOnNodes final : public executor::Executor {
 public:
  std::optional<std::string> Start(const executor::TaskToRun& task, Timestamp now) override {
    return simulated_.Start(task, now);
  }
  std::optional<executor::Ended> Check(const executor::TaskToRun& task, Timestamp now,
                                       std::optional<Timestamp>* due) override {
    if (failing.contains(task.node)) return executor::Ended{true, 0, "failed (test)"};
    return simulated_.Check(task, now, due);
  }
  void Stop(const executor::TaskToRun&) override {}
  std::set<std::string> failing;

 private:
  executor::SimulatedExecutor simulated_;
};

// A berthd control loop on the injected clock and an in-memory store, with
// helpers to drive and read it.
class LifecycleCluster {
 public:
  void AddNode(const std::string& id, Json labels = Json::object()) {
    ASSERT_TRUE(
        nodes_
            .Register(Json{
                {"id", id}, {"labels", labels}, {"resources", {{"cpu", 4}, {"memory", "8Gi"}}}})
            .ok());
  }
  void CreateService(Json service) {
    Result<Json> created = services_.Create(service);
    ASSERT_TRUE(created.ok()) << created.status().message();
  }
  void UpdateNode(const std::string& id, const Json& patch) {
    ASSERT_TRUE(nodes_.Update(id, patch).ok()) << patch.dump();
  }
  // Runs passes until one changes nothing.
  void Settle() {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      if (!pass->wrote) return;
    }
    FAIL() << "no settled state after 10 passes";
  }
  void Advance(Duration d) {
    clock_.Advance(d);
    Settle();
  }
  // name -> "state@node" of each task, a slot's tasks as "web.1#k", oldest
  // first, when it has had several.
  std::map<std::string, std::string> Tasks(const std::string& service = "") {
    const Json listed = (*ListTasks(store_, service))["tasks"];
    return ByTaskName(listed, [](const Json& t) {
      return t["state"].get<std::string>() + "@" + t.value("node", "");
    });
  }
  Json Task(const std::string& id_or_name) { return *GetTask(store_, id_or_name); }
  // "v<version> <state>" -> count, over the service's tasks meant to run.
  std::map<std::string, int> Versions(const std::string& service) {
    std::map<std::string, int> out;
    const Json listed = (*ListTasks(store_, service))["tasks"];
    for (const Json& t : listed)
      if (t["desired_state"] != "shutdown")
        ++out["v" + t["spec_version"].dump() + " " + t["state"].get<std::string>()];
    return out;
  }
  Json UpdateStatus(const std::string& service) {
    Result<std::optional<store::StoredObject>> stored = store_.Get("update", service);
    return stored.ok() && stored->has_value() ? Json::parse((*stored)->body) : Json();
  }
  // The id of the k-th task (oldest first) named `name`.
  std::string IdOf(const std::string& name, size_t k) {
    std::vector<std::pair<int64_t, std::string>> ids;
    const Json listed = (*ListTasks(store_, ""))["tasks"];
    for (const Json& t : listed)
      if (t.value("name", "") == name)
        ids.emplace_back(orchestrator::SerialOf(t["id"].get<std::string>()), t["id"]);
    std::sort(ids.begin(), ids.end());
    return k >= 1 && k <= ids.size() ? ids[k - 1].second : "";
  }

  // The service's tasks meant to run, by their state ("running", ...).
  std::map<std::string, std::set<std::string>> IdsByState(const std::string& service) {
    std::map<std::string, std::set<std::string>> out;
    const Json listed = (*ListTasks(store_, service))["tasks"];
    for (const Json& t : listed)
      if (t.value("desired_state", "running") == "running")
        out[t["state"]].insert(t["id"].get<std::string>());
    return out;
  }
  // node -> the service's running tasks there.
  std::map<std::string, int> RunningPerNode(const std::string& service) {
    std::map<std::string, int> out;
    const Json listed = (*ListTasks(store_, service))["tasks"];
    for (const Json& t : listed)
      if (t["state"] == "running" && t.value("desired_state", "running") == "running")
        ++out[t["node"]];
    return out;
  }
  // Runs passes one at a time (the clock moves 250 ms after a pass that
  // changed nothing) until the service's rollout of its current version
  // (which a pass may make) is no longer under way, checking after every
  // pass that `replicas` tasks run and that at most `most` are meant to
  // run. False after 400 passes.
  bool RollOutCheckingEachPass(const std::string& service, int replicas, int most) {
    for (int i = 0; i < 400; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
      EXPECT_TRUE(pass.ok()) << pass.status().message();
      if (!pass.ok()) return false;
      std::map<std::string, std::set<std::string>> ids = IdsByState(service);
      size_t meant = 0;
      for (const auto& [state, of] : ids) meant += of.size();
      EXPECT_GE(ids["running"].size(), static_cast<size_t>(replicas)) << "pass " << i;
      EXPECT_LE(meant, static_cast<size_t>(most)) << "pass " << i;
      const Json status = UpdateStatus(service);
      const Json version = (*services_.Get(service))["spec_version"];
      if (!pass->wrote && status.is_object() && status["spec_version"] == version &&
          status["state"] != "updating")
        return true;
      if (!pass->wrote) clock_.Advance(Duration{250});
    }
    return false;
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::WatchedStore store_{std::make_shared<store::MemoryStore>()};
  NodeRegistry nodes_{store_};
  ServiceRegistry services_{store_};
  ReconcilerOptions options_;
  FailOnNodes executor_;
  Reconciler reconciler_{store_, nullptr, &clock_, options_, &executor_};
};

class LifecycleTest : public testing::Test, public LifecycleCluster {};

// Drain stops a node's tasks and replaces them elsewhere at once (SwarmKit
// applies no restart delay to a drain); a global service's task on it is
// stopped and not replaced there. Pause only keeps new tasks away.
TEST_F(LifecycleTest, DrainMovesTasksAndPauseOnlyBlocksNewOnes) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"}, {"replicas", 2}});
  CreateService({{"id", "mon"}, {"mode", "global"}});
  Settle();
  ASSERT_EQ(Tasks("web"),
            (std::map<std::string, std::string>{{"web.1", "running@n1"}, {"web.2", "running@n2"}}));
  UpdateNode("n1", {{"availability", "pause"}});
  Settle();
  EXPECT_EQ(Tasks("web").at("web.1"), "running@n1");  // paused: it stays
  ASSERT_TRUE(nodes_.Drain("n1").ok());
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"mon.n1", "shutdown@n1"},
                                                         {"mon.n2", "running@n2"},
                                                         {"web.1#1", "shutdown@n1"},
                                                         {"web.1#2", "running@n2"},
                                                         {"web.2", "running@n2"}}));
  EXPECT_EQ(Task(IdOf("web.1", 1))["message"], "node 'n1' was drained");
  EXPECT_EQ(Task("mon.n1")["message"], "node 'n1' was drained");
  // Active again: the global service comes back; the replicas stay put.
  UpdateNode("n1", {{"availability", "active"}});
  Settle();
  EXPECT_EQ(Tasks("mon").at("mon.n1#2"), "running@n1");
  EXPECT_EQ(Tasks("web").at("web.1#2"), "running@n2");
}

// A down node's tasks are replaced at once by default (SwarmKit's
// orchestrator), an unknown node's after the 15 s grace; the node coming
// back stops the task it was running, so it does not run beside its
// replacement.
TEST_F(LifecycleTest, DownAndUnknownNodesHaveTheirTasksReplacedAfterTheirGrace) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"}, {"replicas", 1}, {"restart_policy", {{"delay", "0s"}}}});
  CreateService({{"id", "api"}, {"replicas", 1}, {"restart_policy", {{"delay", "0s"}}}});
  Settle();
  ASSERT_EQ(Tasks(),
            (std::map<std::string, std::string>{{"api.1", "running@n1"}, {"web.1", "running@n2"}}));
  UpdateNode("n1", {{"state", "unknown"}});
  Settle();  // the grace runs from the first pass that sees the node unknown
  Advance(seconds(14));
  EXPECT_EQ(Tasks("api"), (std::map<std::string, std::string>{{"api.1", "running@n1"}}));
  Advance(seconds(1));
  EXPECT_EQ(Tasks("api"), (std::map<std::string, std::string>{{"api.1#1", "running@n1"},
                                                              {"api.1#2", "running@n2"}}));
  const Json abandoned = Task(IdOf("api.1", 1));
  EXPECT_EQ(abandoned["desired_state"], "shutdown");
  EXPECT_EQ(abandoned["message"],
            "node 'n1' is unknown since 2026-01-01T00:00:00Z; replaced elsewhere");
  // n1 is back, and with it the task it ran before: stopped, not kept.
  UpdateNode("n1", {{"state", "ready"}});
  Settle();
  EXPECT_EQ(Tasks("api"), (std::map<std::string, std::string>{{"api.1#1", "shutdown@n1"},
                                                              {"api.1#2", "running@n2"}}));
  EXPECT_EQ(Task(IdOf("api.1", 1))["message"],
            "stopped: node 'n1' is back and the task was replaced meanwhile");
  UpdateNode("n2", {{"state", "down"}});  // replaced at once
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"api.1#1", "shutdown@n1"},
                                                         {"api.1#2", "running@n2"},
                                                         {"api.1#3", "running@n1"},
                                                         {"web.1#1", "running@n2"},
                                                         {"web.1#2", "running@n1"}}));
  EXPECT_EQ(Task(IdOf("web.1", 1))["desired_state"], "shutdown");
}

// A global task stored as failed on a node that is gone by the time a pass
// reads it (written by an older berthd, or reported late) is decided by its
// restart policy like any other; no replacement goes to the missing node.
TEST_F(LifecycleTest, AFailedGlobalTaskOfARemovedNodeIsNotRestartedThere) {
  AddNode("n1");
  CreateService({{"id", "mon"}, {"mode", "global"}});
  Settle();
  const std::string id = IdOf("mon.n1", 1);
  ASSERT_TRUE(nodes_.Remove("n1").ok());
  ASSERT_TRUE(
      store_
          .Commit({store::Write::Put(
              "task", id, R"({"service":"mon","node":"n1","spec_version":1,"state":"failed"})")})
          .ok());
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"mon.n1", "failed@n1"}}));
  EXPECT_EQ(Task(id)["desired_state"], "shutdown");
}

// A ready again before its grace ends keeps its tasks.
TEST_F(LifecycleTest, ANodeBackWithinItsGraceKeepsItsTasks) {
  AddNode("n1");
  AddNode("n2");
  CreateService({{"id", "web"}, {"replicas", 1}});
  Settle();
  UpdateNode("n1", {{"state", "disconnected"}});
  Settle();
  Advance(seconds(10));
  UpdateNode("n1", {{"state", "ready"}});
  Advance(seconds(10));
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"web.1", "running@n1"}}));
}

// As SwarmKit's constraint enforcer: a label change that leaves a running
// task's node outside its constraints stops it; its replacement goes where
// the constraint holds, or waits with the engine's reason.
TEST_F(LifecycleTest, ConstraintsAreEnforcedOnRunningTasks) {
  AddNode("n1", {{"disk", "ssd"}});
  AddNode("n2", {{"disk", "hdd"}});
  CreateService({{"id", "db"},
                 {"replicas", 1},
                 {"restart_policy", {{"delay", "0s"}}},
                 {"task", {{"constraints", {"node.labels.disk==ssd"}}}}});
  Settle();
  ASSERT_EQ(Tasks(), (std::map<std::string, std::string>{{"db.1", "running@n1"}}));
  UpdateNode("n1", {{"labels", {{"disk", "hdd"}}}});
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"db.1#1", "shutdown@n1"},
                                                         {"db.1#2", "pending@"}}));
  EXPECT_EQ(Task(IdOf("db.1", 1))["message"],
            "node 'n1' no longer satisfies constraint 'node.labels.disk==ssd'");
  UpdateNode("n2", {{"labels", {{"disk", "ssd"}}}});
  Settle();
  EXPECT_EQ(Tasks().at("db.1#2"), "running@n2");
}

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
// rollback brings the previous template back as a new version.
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
    EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v2 failed", 2}, {"v3 running", 8}}));
  }
}

INSTANTIATE_TEST_SUITE_P(EachAction, FailureActionTest,
                         testing::Values("pause", "continue", "rollback"));

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
  EXPECT_EQ(Versions("web"), (std::map<std::string, int>{{"v3 running", 3}}));
  EXPECT_EQ(UpdateStatus("web")["state"], "rollback_completed");
}

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
