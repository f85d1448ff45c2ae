#include "placement/cluster_state.h"

#include <gtest/gtest.h>

#include "placement/test_cluster.h"

namespace berth::placement {
namespace {

using testing::At;
using testing::MakeNode;
using testing::MakeSpec;
using testing::NodeWithCpu;
using testing::SpecReservingCpu;
using testing::TestCluster;

TEST(ClusterState, RejectsDuplicateAndUnknownIds) {
  ClusterState s;
  ASSERT_TRUE(s.AddNode(MakeNode("n")).ok());
  EXPECT_EQ(s.AddNode(MakeNode("n")).status().code(), StatusCode::kConflict);
  EXPECT_EQ(s.AddNode(MakeNode("")).status().code(), StatusCode::kInvalidArgument);
  Task t;
  t.id = "t";
  t.spec = MakeSpec();
  t.node_id = "ghost";
  EXPECT_EQ(s.AddTask(t).status().code(), StatusCode::kNotFound);
  t.node_id = "";
  ASSERT_TRUE(s.AddTask(t).ok());
  EXPECT_EQ(s.AddTask(t).status().code(), StatusCode::kConflict);
  t.id = "no-spec";
  t.spec = nullptr;
  EXPECT_EQ(s.AddTask(t).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClusterState, TracksResourcesPortsAndCountsByState) {
  TestCluster c;
  Node n = MakeNode("n");
  n.resources.milli_cpu = 4000;
  n.resources.memory_bytes = 1000;
  c.Add(n);
  auto spec = MakeSpec();
  spec->reservations.milli_cpu = 1500;
  spec->reservations.memory_bytes = 100;
  spec->ports = {{Protocol::kTcp, 80, true}, {Protocol::kTcp, 81, false}};
  TaskIndex t = c.AddTask("t", "S", spec, TaskState::kRunning, "n");
  const NodeInfo& info = c.state.node(0);
  EXPECT_EQ(info.available_milli_cpu(), 2500);
  EXPECT_EQ(info.available_memory_bytes(), 900);
  EXPECT_TRUE(info.PortInUse(PortSpec{Protocol::kTcp, 80, true}.Key()));
  EXPECT_FALSE(info.PortInUse(PortSpec{Protocol::kTcp, 81, true}.Key()));
  EXPECT_FALSE(info.PortInUse(PortSpec{Protocol::kUdp, 80, true}.Key()));
  EXPECT_EQ(info.active_tasks(), 1u);
  EXPECT_EQ(c.state.ActiveTasksOn(0), 1u);
  EXPECT_EQ(info.ActiveTasksOf(c.state.InternService("S")), 1u);
  EXPECT_EQ(c.state.ActiveTasksOfService(c.state.InternService("S")), 1u);
  ASSERT_TRUE(c.state.SetTaskState(t, TaskState::kComplete, At(5)).ok());
  EXPECT_EQ(info.available_milli_cpu(), 4000);
  EXPECT_EQ(info.available_memory_bytes(), 1000);
  EXPECT_FALSE(info.PortInUse(PortSpec{Protocol::kTcp, 80, true}.Key()));
  EXPECT_EQ(info.active_tasks(), 0u);
  EXPECT_EQ(c.state.ActiveTasksOn(0), 0u);
  EXPECT_EQ(info.ActiveTasksOf(c.state.InternService("S")), 0u);
  EXPECT_EQ(c.state.ActiveTasksOfService(c.state.InternService("S")), 0u);
}

TEST(ClusterState, TasksNotYetRunningOrFinishedAreNotTracked) {
  TestCluster c;
  c.Add(MakeNode("n"));
  auto spec = MakeSpec();
  c.AddTask("new", "S", spec, TaskState::kNew, "n");
  c.AddTask("done", "S", spec, TaskState::kComplete, "n");
  c.AddTask("pre", "S", spec, TaskState::kPending, "n");  // preassigned: not yet
  EXPECT_EQ(c.state.node(0).active_tasks(), 0u);
  EXPECT_TRUE(c.state.task(2).preassigned);
  c.AddTask("assigned", "S", spec, TaskState::kAssigned, "n");
  EXPECT_EQ(c.state.node(0).active_tasks(), 1u);
}

TEST(ClusterState, PendingTasksInArrivalOrder) {
  TestCluster c;
  c.Add(MakeNode("n"));
  auto spec = MakeSpec();
  c.AddTask("b", "S", spec);
  c.AddTask("running", "S", spec, TaskState::kRunning, "n");
  c.AddTask("a", "S", spec);
  Task stop;
  stop.id = "stopping";
  stop.spec = spec;
  stop.desired_state = TaskState::kShutdown;
  ASSERT_TRUE(c.state.AddTask(stop).ok());
  EXPECT_EQ(c.state.PendingTasks(), (std::vector<TaskIndex>{0, 2}));
}

// A forgotten task gives its node's resources back, frees its id, is not
// pending, and leaves the failures it recorded.
TEST(ClusterState, AForgottenTaskReleasesItsNodeAndItsIdButNotItsFailures) {
  TestCluster c;
  c.Add(NodeWithCpu("n", 4000));
  const auto spec = SpecReservingCpu(1000);
  const TaskIndex running = c.AddTask("r", "S", spec, TaskState::kRunning, "n", 1);
  const TaskIndex failed = c.AddTask("f", "S", spec, TaskState::kRunning, "n", 1);
  const TaskIndex waiting = c.AddTask("w", "S", spec, TaskState::kPending, "", 1);
  ASSERT_TRUE(c.state.SetTaskState(failed, TaskState::kFailed, At(10)).ok());
  EXPECT_EQ(c.state.node(0).available_milli_cpu(), 3000);
  c.state.ForgetTask(running);
  c.state.ForgetTask(failed);
  c.state.ForgetTask(waiting);
  c.state.ForgetTask(waiting);  // twice: no effect
  EXPECT_EQ(c.state.forgotten_count(), 3u);
  EXPECT_EQ(c.state.node(0).available_milli_cpu(), 4000);
  EXPECT_EQ(c.state.node(0).active_tasks(), 0u);
  EXPECT_TRUE(c.state.PendingTasks().empty());
  EXPECT_FALSE(c.state.FindTask("r").has_value());
  EXPECT_EQ(c.state.RecentFailures(0, c.state.InternService("S"), 1, At(0)), 1u);
  const TaskIndex again = c.AddTask("r", "S", spec, TaskState::kPending, "", 1);
  EXPECT_EQ(c.state.FindTask("r"), again);
  EXPECT_EQ(c.state.PendingTasks(), (std::vector<TaskIndex>{again}));
}

// Rebalancing's "as if placed afresh": the service's tasks leave their
// nodes (resources and counts), the others stay, no task record is kept,
// and its holders rank first.
TEST(ClusterState, WithoutTasksOfFreesOneServiceAndRanksItsHoldersFirst) {
  TestCluster c;
  c.Add(NodeWithCpu("a", 4000));
  c.Add(NodeWithCpu("b", 4000));
  const auto spec = SpecReservingCpu(1000);
  c.AddTask("s1", "S", spec, TaskState::kRunning, "b", 1);
  c.AddTask("s2", "S", spec, TaskState::kRunning, "b", 1);
  c.AddTask("t1", "T", spec, TaskState::kRunning, "a", 1);
  c.AddTask("w", "S", spec, TaskState::kPending, "", 1);
  const ServiceIndex s = c.state.InternService("S"), t = c.state.InternService("T");
  ClusterState afresh = c.state.WithoutTasksOf(s, std::nullopt);
  EXPECT_EQ(afresh.node(1).available_milli_cpu(), 4000);
  EXPECT_EQ(afresh.node(1).ActiveTasksOf(s), 0u);
  EXPECT_EQ(afresh.ActiveTasksOn(1), 0u);
  EXPECT_EQ(afresh.ActiveTasksOfService(s), 0u);
  EXPECT_EQ(afresh.node(0).available_milli_cpu(), 3000);
  EXPECT_EQ(afresh.node(0).ActiveTasksOf(t), 1u);
  EXPECT_EQ(afresh.task_count(), 0u);
  EXPECT_TRUE(afresh.PendingTasks().empty());
  EXPECT_EQ(afresh.FindService("S"), s);
  EXPECT_EQ(afresh.Ranks(std::nullopt), (std::vector<uint32_t>{1, 0}));  // b holds S
  EXPECT_EQ(c.state.node(1).available_milli_cpu(), 2000);                // the source is as it was
  EXPECT_EQ(c.state.Ranks(std::nullopt), (std::vector<uint32_t>{0, 1}));
}

TEST(ClusterState, RanksFollowIdsOrASeed) {
  TestCluster c;
  c.Add(MakeNode("b"));
  c.Add(MakeNode("c"));
  c.Add(MakeNode("a"));
  EXPECT_EQ(c.state.Ranks(std::nullopt), (std::vector<uint32_t>{1, 2, 0}));
  auto seeded = c.state.Ranks(7);
  std::vector<uint32_t> sorted = seeded;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ(c.state.Ranks(7), seeded);  // same seed, same order
}

}  // namespace
}  // namespace berth::placement
