// RebalanceTarget: the engine's placement of a service afresh, over the
// nodes as they are without its tasks (docs/placement.md, "Rebalancing").
#include "placement/rebalance_target.h"

#include <gtest/gtest.h>

#include "placement/test_cluster.h"

namespace berth::placement {
namespace {

using testing::At;
using testing::NodeWithCpu;
using testing::SpecReservingCpu;
using testing::TestCluster;

std::vector<uint32_t> TargetOf(TestCluster& c, const std::string& service,
                               const std::shared_ptr<const TaskSpec>& spec, uint64_t replicas) {
  return RebalanceTarget(c.state, c.state.InternService(service), service, spec, 2, replicas, {},
                         At(100));
}

// The worked example: six tasks on a and b, c joins: two on each.
TEST(RebalanceTarget, ANodeThatJoinedGetsItsShare) {
  TestCluster c;
  const auto spec = SpecReservingCpu(100);
  for (const char* id : {"a", "b", "c"}) c.Add(NodeWithCpu(id, 4000));
  for (int i = 0; i < 6; ++i)
    c.AddTask("s" + std::to_string(i), "S", spec, TaskState::kRunning, i < 3 ? "a" : "b");
  const size_t records = c.state.task_count();
  EXPECT_EQ(TargetOf(c, "S", spec, 6), (std::vector<uint32_t>{2, 2, 2}));
  EXPECT_EQ(c.state.task_count(), records);  // the state is not changed
  EXPECT_EQ(c.state.node(0).ActiveTasksOf(c.state.InternService("S")), 3u);
}

// Four tasks on b..e of five equal nodes: any four nodes are equally good,
// and the holders rank first, so nothing would move (by id alone, a would
// take one).
TEST(RebalanceTarget, OfEquallyGoodNodesTheHoldersKeepTheirTasks) {
  TestCluster c;
  const auto spec = SpecReservingCpu(100);
  for (const char* id : {"a", "b", "c", "d", "e"}) c.Add(NodeWithCpu(id, 4000));
  for (const char* node : {"b", "c", "d", "e"})
    c.AddTask(std::string("s-") + node, "S", spec, TaskState::kRunning, node);
  EXPECT_EQ(TargetOf(c, "S", spec, 4), (std::vector<uint32_t>{0, 1, 1, 1, 1}));
}

// Other services keep what they hold: a is full with T's task, so both of
// S's tasks go to b although spreading would split them; one that fits
// nowhere counts nowhere.
TEST(RebalanceTarget, OtherTasksKeepTheirResourcesAndUnplaceableTasksCountNowhere) {
  TestCluster c;
  c.Add(NodeWithCpu("a", 2000));
  c.Add(NodeWithCpu("b", 2000));
  c.AddTask("t", "T", SpecReservingCpu(2000), TaskState::kRunning, "a");
  const auto spec = SpecReservingCpu(1000);
  c.AddTask("s1", "S", spec, TaskState::kRunning, "b");
  EXPECT_EQ(TargetOf(c, "S", spec, 3), (std::vector<uint32_t>{0, 2}));
}

}  // namespace
}  // namespace berth::placement
