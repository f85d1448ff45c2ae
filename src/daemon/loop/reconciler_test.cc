#include "daemon/loop/reconciler.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "agent/agent.h"
#include "daemon/daemon_test_support.h"
#include "daemon/loop/stored_task.h"
#include "daemon/registry/class_registry.h"
#include "daemon/registry/job_registry.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "daemon/registry/task_views.h"
#include "orchestrator/orchestrator.h"
#include "store/memory_store.h"
#include "threephase/transport.h"

namespace berth::daemon {
namespace {

using api::Json;

class ReconcilerTest : public testing::Test {
 protected:
  void AddNode(const std::string& id, int cpu) {
    ASSERT_TRUE(
        nodes_.Register(Json{{"id", id}, {"resources", {{"cpu", cpu}, {"memory", "8Gi"}}}}).ok());
  }
  // Runs passes until one changes nothing; returns how many wrote.
  int Settle() {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
      EXPECT_TRUE(pass.ok()) << pass.status().message();
      if (!pass.ok() || !pass->wrote) return i;
    }
    ADD_FAILURE() << "no settled state after 10 passes";
    return -1;
  }
  // task -> "state@node", a task named as users see it ("web.1", a job's
  // "j.1"); when a slot or node has had several tasks, "web.1#k" is its
  // k-th, oldest first.
  std::map<std::string, std::string> Tasks() {
    const Json listed = (*ListTasks(store_, ""))["tasks"];
    return ByTaskName(listed, [](const Json& t) {
      return t["state"].get<std::string>() + "@" + t.value("node", "");
    });
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::MemoryStore* backing_ = new store::MemoryStore;  // owned by store_
  store::WatchedStore store_{std::unique_ptr<store::Store>(backing_)};
  NodeRegistry nodes_{store_};
  JobRegistry jobs_{store_, clock_};
  ClassRegistry classes_{store_};
  ServiceRegistry services_{store_};
  Reconciler reconciler_{store_};
};

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

// A pass that writes more than kParallelEncodeFrom tasks encodes them on
// two threads: every stored body is still its task's (id, node, state).
TEST_F(ReconcilerTest, ALargePassStoresEveryTaskWhole) {
  AddNode("n1", 64);
  AddNode("n2", 64);
  ASSERT_TRUE(services_.Create(Json{{"id", "big"}, {"replicas", 25'000}}).ok());
  Result<PassSummary> first = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->assigned, 25'000);
  const std::map<std::string, std::string> tasks = Tasks();
  ASSERT_EQ(tasks.size(), 25'000u);
  std::map<std::string, int> by_state_and_node;
  for (const auto& [id, state_at_node] : tasks) ++by_state_and_node[state_at_node];
  EXPECT_EQ(by_state_and_node,
            (std::map<std::string, int>{{"assigned@n1", 12'500}, {"assigned@n2", 12'500}}));
  EXPECT_EQ(tasks.count("big.1") + tasks.count("big.25000"), 2u);
  const std::vector<store::StoredObject> stored = *store_.List("task");
  for (const store::StoredObject& o : stored) {
    const StoredTask t = DecodeStoredTask(api::Json::parse(o.body), o.id);
    ASSERT_EQ(t.service, "big");
    ASSERT_EQ(t.state, TaskState::kAssigned) << o.id;
    // The pass's serial: the store's revision when it began (nodes, service).
    ASSERT_EQ(o.id, "big." + std::to_string(t.slot) + ".3");
    ASSERT_EQ(t.node, tasks.at("big." + std::to_string(t.slot)).substr(9)) << o.id;
  }
}

// The loop keeps what it read between passes. A change it did not see (made
// here behind the watch) makes its next commit fail on a precondition; the
// pass after that reads everything again and goes on from the stored state.
TEST_F(ReconcilerTest, AStaleKeptStateLosesItsCommitAndIsReadAgain) {
  AddNode("n1", 4);
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 1}}}}}})
          .ok());
  ASSERT_TRUE(reconciler_.RunPass(clock_.Now()).ok());  // created and assigned
  Json task = *GetTask(store_, "web.1");
  const std::string id = task["id"];
  for (const char* view_only : {"revision", "id", "name"}) task.erase(view_only);
  task["message"] = "written behind the watch";
  ASSERT_TRUE(backing_->Commit({store::Write::Put("task", id, task.dump())}).ok());
  Result<PassSummary> stale = reconciler_.RunPass(clock_.Now());  // would start web.1
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_EQ(Settle(), 1);
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"web.1", "running@n1"}}));
}

TEST_F(ReconcilerTest, ATaskThatFitsNowhereStaysPendingWithTheEnginesReason) {
  AddNode("n1", 2);
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "big"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 8}}}}}})
          .ok());
  Settle();
  const Json why = *WhyTask(store_, "big.1");
  EXPECT_EQ(why["state"], "pending");
  EXPECT_EQ(why["reason"], "no suitable node (insufficient resources on 1 node)");
  const int64_t revision = store_.revision();
  EXPECT_EQ(Settle(), 0);
  EXPECT_EQ(store_.revision(), revision);  // an unchanged reason is not rewritten
}

TEST_F(ReconcilerTest, ScalingDownStopsTheHighestReplicas) {
  AddNode("n1", 8);
  ASSERT_TRUE(services_.Create(Json{{"id", "web"}, {"replicas", 3}}).ok());
  Settle();
  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 1}}).ok());
  Settle();
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{
                {"web.1", "running@n1"}, {"web.2", "shutdown@n1"}, {"web.3", "shutdown@n1"}}));
  EXPECT_EQ((*WhyTask(store_, "web.3"))["reason"], "scaled down to 1 replicas");
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

TEST_F(ReconcilerTest, GlobalServicesRunOnEveryNodeAndRemovedServicesStop) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  ASSERT_TRUE(services_.Create(Json{{"id", "agent"}, {"mode", "global"}}).ok());
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"agent.n1", "running@n1"},
                                                         {"agent.n2", "running@n2"}}));
  ASSERT_TRUE(services_.Remove("agent").ok());
  ASSERT_TRUE(reconciler_.RunPass(clock_.Now()).ok());  // stops them
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"agent.n1", "shutdown@n1"},
                                                         {"agent.n2", "shutdown@n2"}}));
  EXPECT_EQ((*WhyTask(store_, "agent.n1"))["reason"], "service 'agent' was removed");
  Settle();  // a removed service keeps no history
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{}));
}

TEST_F(ReconcilerTest, AFailedGlobalTaskIsReplacedOnItsNode) {
  AddNode("n1", 2);
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "mon"},
                               {"mode", "global"},
                               {"restart_policy", {{"delay", "0s"}}},
                               {"run", {{"duration", 1}, {"outcome", "fail"}}}})
                  .ok());
  Settle();
  clock_.Advance(std::chrono::seconds(1));  // mon.n1 fails
  Settle();
  clock_.Advance(std::chrono::seconds(1));  // and so does its replacement
  Settle();
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{
                {"mon.n1#1", "failed@n1"}, {"mon.n1#2", "failed@n1"}, {"mon.n1#3", "running@n1"}}));
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
  // minutes (spec/placement.md); then it sorts last.
  EXPECT_EQ(nodes, (std::vector<std::string>{"n1", "n1", "n1", "n1", "n1", "n2"}));
  EXPECT_EQ((*WhyTask(store_, first))["reason"], "failed after 1000 ms (simulated)");
}

// A pass that handles one change looks at what changed, not at every task:
// one replica fewer of 2,000 touches the task it stops; one more, the task
// it makes; an ended timer, its task.
TEST_F(ReconcilerTest, APassForOneChangeVisitsOnlyWhatChanged) {
  AddNode("n1", 4000);
  ASSERT_TRUE(services_.Create(Json{{"id", "big"}, {"replicas", 2000}}).ok());
  ASSERT_TRUE(
      services_.Create(Json{{"id", "short"}, {"replicas", 1}, {"run", {{"duration", 5}}}}).ok());
  Settle();
  ASSERT_TRUE(services_.Update("big", Json{{"replicas", 1999}}).ok());
  Result<PassSummary> down = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->stopped, 1);
  EXPECT_FALSE(down->visited_all);
  EXPECT_EQ(down->visited, 1u);
  EXPECT_EQ(Tasks().at("big.2000"), "shutdown@n1");
  Settle();
  ASSERT_TRUE(services_.Update("big", Json{{"replicas", 2000}}).ok());
  Result<PassSummary> up = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->created, 1);
  EXPECT_LE(up->visited, 2u);  // the new task, and the one stopped before (now in history)
  Settle();
  clock_.Advance(std::chrono::seconds(5));  // short.1 ends
  Result<PassSummary> ended = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(ended.ok());
  EXPECT_FALSE(ended->visited_all);
  EXPECT_LE(ended->visited, 2u);                      // short.1, and its replacement
  EXPECT_EQ(Tasks().at("short.1#1"), "complete@n1");  // its replacement waits 5 s
  // A new node goes to the engine alone; a removed one concerns every task.
  Settle();
  AddNode("n2", 4);
  Result<PassSummary> added = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(added.ok());
  EXPECT_FALSE(added->visited_all);
  EXPECT_EQ(added->visited, 0u);
  ASSERT_TRUE(nodes_.Remove("n2").ok());
  Result<PassSummary> removed = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->visited_all);
}

// The incremental passes leave the store where a pass that reads and visits
// everything (a new reconciler) finds nothing to do, after every step of a
// random sequence of service, node and time changes.
TEST_F(ReconcilerTest, IncrementalPassesLeaveNothingForAFullPass) {
  std::mt19937_64 random(14);  // 300 steps: services overflow the nodes often
  auto pick = [&](uint64_t n) { return random() % n; };
  std::vector<std::string> services, nodes;
  int next = 0;
  for (int step = 0; step < 300; ++step) {
    const uint64_t op = pick(8);
    if (op == 0 || services.empty()) {
      const std::string id = "s" + std::to_string(next++);
      Json service = {{"id", id}, {"task", {{"resources", {{"cpu", pick(2)}}}}}};
      if (pick(4) == 0)
        service["mode"] = "global";
      else
        service["replicas"] = pick(12);
      if (pick(2) == 0)
        service["run"] = {{"duration", 1 + pick(3)}, {"outcome", pick(2) ? "fail" : "complete"}};
      ASSERT_TRUE(services_.Create(service).ok()) << service.dump();
      services.push_back(id);
    } else if (op == 1 || op == 2) {
      (void)services_.Update(services[pick(services.size())], Json{{"replicas", pick(12)}});
    } else if (op == 3) {
      const size_t i = pick(services.size());
      ASSERT_TRUE(services_.Remove(services[i]).ok());
      services.erase(services.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 4 || nodes.empty()) {
      nodes.push_back("n" + std::to_string(next++));
      AddNode(nodes.back(), 1 + static_cast<int>(pick(6)));
    } else if (op == 5) {
      const size_t i = pick(nodes.size());
      ASSERT_TRUE(nodes_.Remove(nodes[i]).ok());
      nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 6) {
      (void)services_.Update(services[pick(services.size())],
                             Json{{"task", {{"resources", {{"cpu", pick(2)}}}}}});
    } else {
      clock_.Advance(std::chrono::milliseconds(pick(2500)));
    }
    ASSERT_GE(Settle(), 0) << "step " << step;
    store::WatchedStore fresh_store(std::shared_ptr<store::Store>(backing_, [](store::Store*) {}));
    Reconciler fresh(fresh_store);
    Result<PassSummary> full = fresh.RunPass(clock_.Now());
    ASSERT_TRUE(full.ok()) << full.status().message();
    ASSERT_FALSE(full->wrote) << "step " << step << " (op " << op << "): created " << full->created
                              << ", assigned " << full->assigned << ", started " << full->started
                              << ", stopped " << full->stopped << ", pruned " << full->pruned;
  }
}

// A job of `count` tasks of 1 CPU that run `seconds`.
Json Job(const std::string& id, const std::string& requestor, int count, int seconds) {
  Json tasks = Json::array();
  for (int i = 0; i < count; ++i) tasks.push_back({{"duration", seconds}});
  return {{"id", id},
          {"requestor", requestor},
          {"task", {{"resources", {{"cpu", 1}}}}},
          {"tasks", tasks}};
}

std::map<std::string, int> StatesOf(const Json& tasks, const std::string& job) {
  std::map<std::string, int> states;
  for (const Json& t : tasks)
    if (t.value("job", "") == job) ++states[t["state"]];
  return states;
}

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

TEST_F(ReconcilerTest, ABadClassConfigurationLeavesThePreviousInForce) {
  ASSERT_TRUE(classes_.Update(Json{{"classes", {{"land", 60}, {"diff", 40}}}}).ok());
  Result<Json> bad =
      classes_.Update(Json{{"requestors", Json::array({Json::array({"(", "land"})})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("requestors", 0), 0u) << bad.status().message();
  EXPECT_EQ((*classes_.Get())["classes"], (Json{{"land", 60}, {"diff", 40}}));
}

// The three-phase path: two in-process agents of two 4-CPU nodes each.
class AgentReconcilerTest : public ReconcilerTest {
 protected:
  static std::vector<Node> Nodes(const std::string& prefix) {
    std::vector<Node> nodes(2);
    for (size_t i = 0; i < nodes.size(); ++i) {
      nodes[i].id = prefix + std::to_string(i);
      nodes[i].resources = {4000, int64_t{8} << 30, {}};
      nodes[i].labels["slot"] = std::to_string(i);
    }
    return nodes;
  }
  static AgentPlacementOptions Options() {
    AgentPlacementOptions options;
    options.scheduler.cluster_percent = 100;
    options.scheduler.node_basis_points = 10'000;
    options.scheduler.max_attempts = 2;
    options.scheduler.samplers = 1;
    options.retry_after = std::chrono::hours(1);  // one try per test
    return options;
  }
  void SetUp() override { placement_.Start(nullptr); }
  // Passes until settled, letting the agents decide in between.
  void SettleWithAgents() { SettleWith(agent_reconciler_, placement_); }
  // The same with another berthd (a restarted one) over the same store.
  void SettleWith(Reconciler& reconciler, AgentPlacement& placement) {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler.RunPass(clock_.Now());
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      ASSERT_TRUE(placement.WaitIdle(std::chrono::seconds(10)));
      ASSERT_TRUE(placement.WaitCalls(std::chrono::seconds(10)));
      if (!pass->wrote && !pass->waiting) return;
    }
    FAIL() << "no settled state after 10 passes";
  }
  size_t Bindings() const { return a_.bindings() + b_.bindings(); }

  agent::Agent a_{{.id = "a"}, Nodes("a")}, b_{{.id = "b"}, Nodes("b")};
  threephase::InProcessTransport ta_{a_}, tb_{b_};
  AgentPlacement placement_{{&ta_, &tb_}, clock_, Options()};
  Reconciler agent_reconciler_{store_, &placement_};
};

TEST_F(AgentReconcilerTest, ReplicasAreBoundByAgentsAndReleasedWhenStopped) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 4}, {"task", {{"resources", {{"cpu", 3}}}}}})
          .ok());
  SettleWithAgents();
  std::set<std::string> nodes;
  const Json tasks = (*ListTasks(store_, ""))["tasks"];
  ASSERT_EQ(tasks.size(), 4u);
  for (const Json& t : tasks) {
    EXPECT_EQ(t["state"], "running") << t.dump();
    EXPECT_EQ(t.value("agent", ""), t.value("node", "").substr(0, 1)) << t.dump();
    nodes.insert(t.value("node", ""));
  }
  EXPECT_EQ(nodes.size(), 4u);  // 3 of 4 CPUs each: one task per node
  EXPECT_EQ(Bindings(), 4u);

  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 1}}).ok());
  SettleWithAgents();
  EXPECT_EQ(Bindings(), 1u);  // the three stopped tasks gave their nodes back
  EXPECT_EQ(placement_.counters().released.load(), 3u);
  ASSERT_TRUE(services_.Remove("web").ok());
  SettleWithAgents();
  EXPECT_EQ(Bindings(), 0u);
}

TEST_F(AgentReconcilerTest, ATaskNoAgentCanTakeStaysPendingWithTheReason) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "big"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 8}}}}}})
          .ok());
  SettleWithAgents();
  const Json why = *WhyTask(store_, "big.1");
  EXPECT_EQ(why["state"], "pending");
  EXPECT_NE(why["reason"].get<std::string>().find("no cluster agent could place the task: failed "
                                                  "after 2 attempts"),
            std::string::npos)
      << why.dump();
  EXPECT_EQ(Bindings(), 0u);
  // Not handed out again before retry_after (an hour here).
  EXPECT_EQ(agent_reconciler_.RunPass(clock_.Now())->wrote, false);
  EXPECT_EQ(placement_.counters().submitted.load(), 1u);
}

TEST_F(AgentReconcilerTest, JobTasksAreAdmittedOnTheAgentsNodesAndReleasedOnCompletion) {
  Result<Json> job = jobs_.Submit(Json{{"id", "build"},
                                       {"requestor", "ci"},
                                       {"task", {{"resources", {{"cpu", 1}}}}},
                                       {"tasks", Json::array({Json{{"name", "compile"}}})}});
  ASSERT_TRUE(job.ok()) << job.status().message();
  SettleWithAgents();
  EXPECT_EQ((*WhyTask(store_, "build.1"))["state"], "running");
  EXPECT_EQ(Bindings(), 1u);
  clock_.Advance(std::chrono::seconds(1));  // the default simulated duration
  SettleWithAgents();
  const Json task = *WhyTask(store_, "build.1");
  EXPECT_EQ(task["state"], "complete") << task.dump();
  EXPECT_EQ(Bindings(), 0u);
  EXPECT_EQ(placement_.counters().bound.load(), 1u);
  EXPECT_EQ(placement_.counters().released.load(), 1u);
}

TEST_F(AgentReconcilerTest, GlobalServicesGetAPinnedTaskOnEachEligibleAgentNode) {
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "mon"},
                               {"mode", "global"},
                               {"task",
                                {{"resources", {{"cpu", 3}}},
                                 {"constraints", Json::array({"node.labels.slot==0"})}}}})
                  .ok());
  SettleWithAgents();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"mon.a0", "running@a0"},
                                                         {"mon.b0", "running@b0"}}));
  EXPECT_EQ((*GetTask(store_, "mon.b0")).value("agent", ""), "b");
  EXPECT_EQ(Bindings(), 2u);

  // Every node is eligible, but a0 and b0 have 1 CPU left of 4.
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "log"}, {"mode", "global"}, {"task", {{"resources", {{"cpu", 2}}}}}})
          .ok());
  SettleWithAgents();
  EXPECT_EQ(Tasks()["log.a1"], "running@a1");
  EXPECT_EQ(Tasks()["log.b1"], "running@b1");
  const Json why = *WhyTask(store_, "log.a0");
  EXPECT_EQ(why["state"], "pending");
  EXPECT_NE(why["reason"].get<std::string>().find("node 'a0': insufficient resources on 1 node"),
            std::string::npos)
      << why.dump();
  EXPECT_EQ(Bindings(), 4u);

  ASSERT_TRUE(services_.Remove("mon").ok());
  ASSERT_TRUE(services_.Remove("log").ok());
  SettleWithAgents();
  EXPECT_EQ(Bindings(), 0u);
  EXPECT_EQ(placement_.counters().released.load(), 4u);  // not the pending ones
}

TEST_F(AgentReconcilerTest, AfterARestartBindingsNoStoredTaskHoldsAreReleased) {
  ASSERT_TRUE(services_.Create(Json{{"id", "web"}, {"replicas", 1}}).ok());
  SettleWithAgents();
  ASSERT_EQ(Bindings(), 1u);
  // A binding made just before berthd died, never stored.
  auto spec = std::make_shared<TaskSpec>();
  ASSERT_EQ(b_.Commit({{"web.2", 0, spec, {}, {}, {}}, 1, "b1"}).outcome,
            agent::CommitOutcome::kBound);
  ASSERT_EQ(Bindings(), 2u);

  // berthd restarts: new placement and reconciler over the same agents and store.
  AgentPlacement restarted{{&ta_, &tb_}, clock_, Options()};
  restarted.Start(nullptr);
  Reconciler reconciler{store_, &restarted};
  ASSERT_TRUE(reconciler.RunPass(clock_.Now()).ok());
  ASSERT_TRUE(restarted.WaitCalls(std::chrono::seconds(10)));  // the check, off the loop
  EXPECT_EQ(Bindings(), 1u);                                   // the stored task keeps its binding
  EXPECT_EQ(restarted.counters().stray_released.load(), 1u);
  EXPECT_FALSE(restarted.BindingsDue());  // until check_bindings_every has passed
}

// An agent whose calls hang until the test lets them go: releases and
// binding checks on it must not hold up a pass.
class HangingTransport final : public threephase::AgentTransport {
 public:
  explicit HangingTransport(agent::Agent& agent) : inner_(agent) {}
  void Hang(bool on) {
    {
      std::lock_guard lock(mu_);
      hanging_ = on;
    }
    cv_.notify_all();
  }
  const std::string& agent_id() const override { return inner_.agent_id(); }
  Result<agent::SampleResponse> Sample(const agent::SampleRequest& r, Duration t) override {
    return inner_.Sample(r, t);
  }
  Result<agent::CommitResponse> Commit(const agent::CommitRequest& r, Duration t) override {
    return inner_.Commit(r, t);
  }
  Result<size_t> Release(const std::vector<std::string>& ids, Duration t) override {
    Wait();
    return inner_.Release(ids, t);
  }
  Result<std::vector<std::string>> Bindings(Duration t) override {
    Wait();
    return inner_.Bindings(t);
  }
  Result<std::vector<std::string>> Eligible(const TaskSpec& spec, Duration t) override {
    return inner_.Eligible(spec, t);
  }
  uint32_t node_count() const override { return inner_.node_count(); }

 private:
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !hanging_; });
  }
  threephase::InProcessTransport inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool hanging_ = false;
};

// Passes go on while an agent does not answer a binding check or a
// release; what it answers later is applied by a later pass.
TEST_F(AgentReconcilerTest, PassesDoNotWaitForAgentCalls) {
  HangingTransport hanging(b_);
  AgentPlacement placement{{&ta_, &hanging}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  hanging.Hang(true);  // the first pass's binding check of b hangs
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 4}, {"task", {{"resources", {{"cpu", 3}}}}}})
          .ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reconciler.RunPass(clock_.Now()).ok());
    ASSERT_TRUE(placement.WaitIdle(std::chrono::seconds(10)));
  }
  EXPECT_EQ(Bindings(), 4u);  // placed meanwhile, on both agents
  EXPECT_TRUE(placement.Busy());
  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 0}}).ok());
  Result<PassSummary> stop = reconciler.RunPass(clock_.Now());  // releases queue behind the check
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(stop->stopped, 4);
  EXPECT_EQ(b_.bindings(), 2u);
  hanging.Hang(false);
  SettleWith(reconciler, placement);
  EXPECT_EQ(Bindings(), 0u);
  EXPECT_EQ(placement.counters().stray_released.load(), 0u);
}

// A new spec version stops every task and starts new ones in one pass:
// each running task keeps exactly one binding, and none of the new tasks
// loses its binding to the release of the task it replaces.
TEST_F(AgentReconcilerTest, ANewSpecVersionLeavesOneBindingPerRunningTask) {
  const Json all_at_once = {{"parallelism", 0}};
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "web"},
                               {"replicas", 2},
                               {"update_config", all_at_once},
                               {"task", {{"resources", {{"cpu", 1}}}}}})
                  .ok());
  ASSERT_TRUE(
      services_.Create(Json{{"id", "mon"}, {"mode", "global"}, {"update_config", all_at_once}})
          .ok());
  SettleWithAgents();
  ASSERT_EQ(Bindings(), 6u);
  // New templates that fit beside the old tasks, whose bindings are released
  // only after the pass that replaces them.
  const Json memory = {{"resources", {{"cpu", 1}, {"memory", "1Gi"}}}};
  ASSERT_TRUE(services_.Update("web", Json{{"task", memory}}).ok());
  ASSERT_TRUE(services_.Update("mon", Json{{"task", memory}}).ok());
  SettleWithAgents();
  int running = 0;
  const Json tasks = (*ListTasks(store_, ""))["tasks"];
  for (const Json& t : tasks) {
    if (t["state"] != "running") continue;
    ++running;
    EXPECT_EQ(t["spec_version"], 2) << t.dump();
  }
  EXPECT_EQ(running, 6) << tasks.dump(1);
  EXPECT_EQ(Bindings(), 6u);
  // The agents name the new version's nodes after the pass that stopped the
  // old tasks, so the replacement is a new task beside the old one's record.
  EXPECT_EQ(Tasks()["mon.a0#1"], "shutdown@a0");
  EXPECT_EQ(Tasks()["mon.a0#2"], "running@a0");
}

// Agents restart and forget their bindings: b with the same nodes (its tasks
// are bound again), a with other nodes (its tasks cannot be, so they fail
// and are replaced where there is room).
TEST_F(AgentReconcilerTest, BindingsAnAgentLostAreBoundAgainOrTheirTasksReplaced) {
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "web"},
                               {"replicas", 4},
                               {"task", {{"resources", {{"cpu", 3}}}}},
                               {"restart_policy", {{"delay", "0s"}}}})
                  .ok());
  SettleWithAgents();
  ASSERT_EQ(a_.bindings(), 2u);  // 3 of 4 CPUs: one task per node
  ASSERT_EQ(b_.Release(b_.BoundTasks()), 2u);
  std::vector<Node> other(1);
  other[0].id = "a9";
  other[0].resources = {4000, int64_t{8} << 30, {}};
  agent::Agent a_restarted{{.id = "a"}, other};
  threephase::InProcessTransport ta_restarted{a_restarted};

  AgentPlacement placement{{&ta_restarted, &tb_}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  SettleWith(reconciler, placement);
  EXPECT_EQ(placement.counters().rebound.load(), 2u);
  EXPECT_EQ(placement.counters().lost.load(), 2u);
  EXPECT_EQ(b_.bindings(), 2u);
  EXPECT_EQ(a_restarted.bindings(), 1u);  // one replacement on a9, the other has no room
  int failed = 0, running = 0, pending = 0;
  const Json tasks = (*ListTasks(store_, ""))["tasks"];
  for (const Json& t : tasks) {
    failed += t["state"] == "failed";
    running += t["state"] == "running";
    pending += t["state"] == "pending";
    if (t["state"] != "failed") continue;
    EXPECT_NE(t["message"].get<std::string>().find(
                  "no longer held the task (restarted?) and could not bind it again on node 'a"),
              std::string::npos)
        << t.dump();
  }
  EXPECT_EQ(failed, 2) << tasks.dump(1);
  EXPECT_EQ(running, 3) << tasks.dump(1);
  EXPECT_EQ(pending, 1);
}

// An agent restarted with fewer nodes: the global task of the node it no
// longer has fails (its binding is lost) and its restart is retired with the
// reason, instead of waiting forever for a node that is gone; the agent's
// other node keeps its task.
TEST_F(AgentReconcilerTest, AGlobalTaskOfANodeItsAgentNoLongerHasIsRetired) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "glob"}, {"mode", "global"}, {"restart_policy", {{"delay", "0s"}}}})
          .ok());
  SettleWithAgents();
  ASSERT_EQ(Bindings(), 4u);
  ASSERT_EQ(b_.Release(b_.BoundTasks()), 2u);
  agent::Agent b_restarted{{.id = "b"}, {Nodes("b")[0]}};  // without b1
  threephase::InProcessTransport tb_restarted{b_restarted};
  AgentPlacement placement{{&ta_, &tb_restarted}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  SettleWith(reconciler, placement);
  const std::map<std::string, std::string> tasks = Tasks();
  EXPECT_EQ(tasks.at("glob.b0"), "running@b0");  // bound again
  EXPECT_EQ(tasks.at("glob.b1#1"), "failed@b1");
  EXPECT_EQ(tasks.at("glob.b1#2"), "shutdown@b1");
  EXPECT_EQ(tasks.size(), 5u) << "no task waits on b1";
  const Json retired = (*ListTasks(store_, "glob"))["tasks"];
  std::string reason;
  for (const Json& t : retired)
    if (t["state"] == "shutdown") reason = t["message"];
  EXPECT_EQ(reason,
            "agent b no longer offers node 'b1' to the service (gone, or no longer eligible)");
}

TEST_F(AgentReconcilerTest, AJobTaskItsAgentLostWaitsAgainAndRunsElsewhere) {
  ASSERT_TRUE(jobs_
                  .Submit(Json{{"id", "build"},
                               {"requestor", "ci"},
                               {"task", {{"resources", {{"cpu", 1}}}}},
                               {"tasks", Json::array({Json{{"name", "compile"}}})}})
                  .ok());
  SettleWithAgents();
  ASSERT_EQ((*GetTask(store_, "build.1"))["state"], "running");
  // Both agents restart with other nodes.
  std::vector<Node> a_nodes(1), b_nodes(1);
  a_nodes[0].id = "a9";
  b_nodes[0].id = "b9";
  a_nodes[0].resources = b_nodes[0].resources = {4000, int64_t{8} << 30, {}};
  agent::Agent a9{{.id = "a"}, a_nodes}, b9{{.id = "b"}, b_nodes};
  threephase::InProcessTransport ta9{a9}, tb9{b9};
  AgentPlacement placement{{&ta9, &tb9}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  SettleWith(reconciler, placement);
  EXPECT_EQ(placement.counters().lost.load(), 1u);
  const Json task = *GetTask(store_, "build.1");
  EXPECT_EQ(task["state"], "running") << task.dump();
  EXPECT_EQ(task["node"].get<std::string>().substr(1), "9") << task.dump();
  EXPECT_EQ(a9.bindings() + b9.bindings(), 1u);
}

}  // namespace
}  // namespace berth::daemon
