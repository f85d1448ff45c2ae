// The task lifecycle of berthd's control loop (issue 15), on the injected
// clock and the in-memory store: drained, down and relabelled nodes move
// their tasks; the restart policy; ids unique across a service's removal
// and re-creation.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon/node_registry.h"
#include "daemon/reconciler.h"
#include "daemon/service_registry.h"
#include "daemon/task_views.h"
#include "orchestrator/orchestrator.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

using api::Json;
using std::chrono::seconds;

class LifecycleTest : public testing::Test {
 protected:
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
    std::map<std::string, std::vector<std::pair<int64_t, std::string>>> by_name;
    for (const Json& t : listed)
      by_name[t.value("name", t["id"])].emplace_back(
          orchestrator::SerialOf(t["id"].get<std::string>()),
          t["state"].get<std::string>() + "@" + t.value("node", ""));
    std::map<std::string, std::string> out;
    for (auto& [name, tasks] : by_name) {
      std::sort(tasks.begin(), tasks.end());
      for (size_t k = 0; k < tasks.size(); ++k)
        out[tasks.size() == 1 ? name : name + "#" + std::to_string(k + 1)] = tasks[k].second;
    }
    return out;
  }
  Json Task(const std::string& id_or_name) { return *GetTask(store_, id_or_name); }
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

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::WatchedStore store_{std::make_shared<store::MemoryStore>()};
  NodeRegistry nodes_{store_};
  ServiceRegistry services_{store_};
  ReconcilerOptions options_;
  Reconciler reconciler_{store_, nullptr, &clock_, options_};
};

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
  for (const Json& t : (*ListTasks(store_, "api"))["tasks"]) old_ids.insert(t["id"]);
  ASSERT_TRUE(services_.Remove("api").ok());
  CreateService({{"id", "api"}, {"replicas", 2}});  // before any pass sees the removal
  EXPECT_TRUE((*ListTasks(store_, "api"))["tasks"].empty());
  Settle();
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{{"api.1", "running@n1"}, {"api.2", "running@n1"}}));
  for (const Json& t : (*ListTasks(store_, ""))["tasks"])
    EXPECT_FALSE(old_ids.contains(t["id"])) << t["id"];
}

}  // namespace
}  // namespace berth::daemon
