#include "daemon/reconciler.h"

#include <gtest/gtest.h>

#include <map>

#include "daemon/node_registry.h"
#include "daemon/service_registry.h"
#include "daemon/task_views.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

using api::Json;

class ReconcilerTest : public testing::Test {
 protected:
  void AddNode(const std::string& id, int cpu) {
    ASSERT_TRUE(nodes_.Register(Json{{"id", id}, {"resources", {{"cpu", cpu}, {"memory", "8Gi"}}}}).ok());
  }
  // Runs passes until one changes nothing; returns how many wrote.
  int Settle() {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(*ParseRfc3339("2026-01-01T00:00:00Z"));
      EXPECT_TRUE(pass.ok()) << pass.status().message();
      if (!pass.ok() || !pass->wrote) return i;
    }
    ADD_FAILURE() << "no settled state after 10 passes";
    return -1;
  }
  // task id -> "state@node"
  std::map<std::string, std::string> Tasks() {
    std::map<std::string, std::string> out;
    const Json tasks = (*ListTasks(store_, ""))["tasks"];
    for (const Json& t : tasks)
      out[t["id"]] = t["state"].get<std::string>() + "@" + t.value("node", "");
    return out;
  }

  store::MemoryStore store_;
  NodeRegistry nodes_{store_};
  ServiceRegistry services_{store_};
  Reconciler reconciler_{store_};
};

TEST_F(ReconcilerTest, ReplicasAreCreatedPlacedAndStarted) {
  AddNode("n1", 4);
  AddNode("n2", 4);
  Result<Json> created = services_.Create(Json{{"id", "web"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", 1}}}}}});
  ASSERT_TRUE(created.ok()) << created.status().message();
  Result<PassSummary> first = reconciler_.RunPass(*ParseRfc3339("2026-01-01T00:00:00Z"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->created, 3);
  EXPECT_EQ(first->assigned, 3);
  EXPECT_EQ(Settle(), 1);  // the simulated executor starts them, then nothing changes
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{
                         {"web.1", "running@n1"}, {"web.2", "running@n2"}, {"web.3", "running@n1"}}));
  EXPECT_EQ((*WhyTask(store_, "web.1"))["reason"], "started by the simulated executor");
}

TEST_F(ReconcilerTest, ATaskThatFitsNowhereStaysPendingWithTheEnginesReason) {
  AddNode("n1", 2);
  ASSERT_TRUE(services_.Create(Json{{"id", "big"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 8}}}}}}).ok());
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
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{
                         {"web.1", "running@n1"}, {"web.2", "shutdown@n1"}, {"web.3", "shutdown@n1"}}));
  EXPECT_EQ((*WhyTask(store_, "web.3"))["reason"], "scaled down to 1 replicas");
}

TEST_F(ReconcilerTest, ANewSpecVersionReplacesTheTasks) {
  AddNode("n1", 8);
  ASSERT_TRUE(services_.Create(Json{{"id", "web"}, {"replicas", 2}, {"task", {{"resources", {{"cpu", 1}}}}}}).ok());
  Settle();
  ASSERT_TRUE(services_.Update("web", Json{{"task", {{"resources", {{"cpu", 2}}}}}}).ok());
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
  EXPECT_EQ(Tasks().at("web.1"), "running@n2");  // the id is reused for the replacement
}

TEST_F(ReconcilerTest, GlobalServicesRunOnEveryNodeAndRemovedServicesStop) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  ASSERT_TRUE(services_.Create(Json{{"id", "agent"}, {"mode", "global"}}).ok());
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"agent.n1", "running@n1"}, {"agent.n2", "running@n2"}}));
  ASSERT_TRUE(services_.Remove("agent").ok());
  Settle();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"agent.n1", "shutdown@n1"}, {"agent.n2", "shutdown@n2"}}));
  EXPECT_EQ((*WhyTask(store_, "agent.n1"))["reason"], "service 'agent' was removed");
}

}  // namespace
}  // namespace berth::daemon
