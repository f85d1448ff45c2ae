// Tests of the node lifecycle step (node_lifecycle.h): drained, down, unknown and relabelled nodes
// and what happens to their tasks, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/steps/lifecycle_cluster.h"
#include "daemon/nodes/node_executor.h"

namespace berth::daemon {
namespace {

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

// A berth-node cut off past its grace comes back still running the task
// the loop replaced meanwhile: the old copy is told to stop, and its
// replacement, placed on the same node, starts only once the node reports
// the old copy's end, or once the old copy's stop grace (plus the slack
// for the kill and report) has passed without a word: never both at once.
// Built before the cluster that runs its tasks on it.
struct WithNodeExecutor {
  NodeExecutor node_executor_{[] {}};
};

class StoppingCopyTest : public testing::Test, protected WithNodeExecutor, public LifecycleCluster {
 protected:
  StoppingCopyTest() : LifecycleCluster({}, &node_executor_) { node_executor_.SetNode("n1", true); }
  // What n1 was told since it joined: task -> whether it is to run.
  std::map<std::string, bool> Assigned() {
    std::map<std::string, bool> out;
    for (const Assignment& a :
         node_executor_.Assignments("n1", node_executor_.instance(), 0, Duration{0}).changes)
      out[a.task] = a.run;
    return out;
  }
  // A task placed on n1, running once n1 says so; the node then goes down
  // past its grace (the task is replaced, the replacement waits for a node)
  // and comes back. Returns the old task's id; the replacement is web.1's
  // second.
  std::string RunCutOffAndReturn() {
    AddNode("n1");
    CreateService(
        {{"id", "web"},
         {"replicas", 1},
         {"restart_policy", {{"delay", "0s"}}},
         {"task", {{"command", "sleep"}, {"args", {"600"}}, {"stop_grace_period", "8s"}}}});
    Settle();
    const std::string old = IdOf("web.1", 1);
    node_executor_.Report("n1", {{old, TaskState::kRunning, "", 0}});
    Settle();
    EXPECT_EQ(Task(old)["state"], "running");
    UpdateNode("n1", {{"state", "down"}});
    Settle();  // down_grace 0: replaced at once, and nowhere to go
    EXPECT_EQ(Task(IdOf("web.1", 2))["state"], "pending");
    UpdateNode("n1", {{"state", "ready"}});
    Settle();
    return old;
  }
};

TEST_F(StoppingCopyTest, TheReplacementStartsOnlyOnceTheNodeReportsTheOldCopysEnd) {
  const std::string old = RunCutOffAndReturn();
  const std::string next = IdOf("web.1", 2);
  ASSERT_NE(next, old);
  EXPECT_EQ(Task(old)["state"], "shutdown");
  EXPECT_EQ(Task(next)["state"], "assigned");
  EXPECT_EQ(Task(next)["message"], "waiting for " + old +
                                       " to stop on node 'n1' (at most until "
                                       "2026-01-01T00:00:10Z)");
  EXPECT_EQ(Assigned(), (std::map<std::string, bool>{{old, false}}));  // only the stop
  clock_.Advance(seconds(9));
  Settle();
  EXPECT_EQ(Assigned(), (std::map<std::string, bool>{{old, false}}));
  node_executor_.Report("n1", {{old, TaskState::kShutdown, "exit status 143", 0}});
  Settle();
  EXPECT_EQ(Assigned(), (std::map<std::string, bool>{{old, false}, {next, true}}));
  EXPECT_EQ(Task(next)["message"], old + " stopped; starting");
}

TEST_F(StoppingCopyTest, WithoutAReportTheReplacementStartsAfterTheStopGrace) {
  const std::string old = RunCutOffAndReturn();
  const std::string next = IdOf("web.1", 2);
  clock_.Advance(seconds(10) - Duration{1});
  Settle();
  EXPECT_EQ(Assigned(), (std::map<std::string, bool>{{old, false}}));
  clock_.Advance(Duration{1});
  Settle();
  EXPECT_EQ(Assigned(), (std::map<std::string, bool>{{old, false}, {next, true}}));
  EXPECT_EQ(Task(next)["message"],
            old + " did not report its end by 2026-01-01T00:00:10Z; starting");
}

}  // namespace
}  // namespace berth::daemon
