// Tests of the global tasks step (global_tasks.h): a global service runs one task on each node that
// takes it, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"
#include "daemon/loop/steps/lifecycle_cluster.h"

namespace berth::daemon {
namespace {

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

}  // namespace
}  // namespace berth::daemon
