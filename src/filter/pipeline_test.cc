#include "filter/pipeline.h"

#include <gtest/gtest.h>

namespace berth::filter {
namespace {

NodeInfo Ready(int64_t memory) {
  Node n;
  n.id = "n";
  n.resources.memory_bytes = memory;
  return NodeInfo(n);
}

NodeInfo Down() {
  Node n;
  n.id = "d";
  n.state = NodeState::kDown;
  return NodeInfo(n);
}

TEST(Pipeline, FirstRejectingFilterIsCountedAndSortedByCount) {
  Pipeline p;
  TaskSpec spec;
  spec.reservations.memory_bytes = 100;
  p.SetTask(spec, 0);
  EXPECT_FALSE(p.Process(Down()));  // ready fails first, resources not asked
  EXPECT_FALSE(p.Process(Ready(50)));
  EXPECT_FALSE(p.Process(Ready(50)));
  EXPECT_EQ(p.Explain(), "insufficient resources on 2 nodes; 1 node not available for new tasks");
}

TEST(Pipeline, TiesKeepPipelineOrder) {
  Pipeline p;
  TaskSpec spec;
  spec.reservations.memory_bytes = 100;
  p.SetTask(spec, 0);
  EXPECT_FALSE(p.Process(Ready(50)));
  EXPECT_FALSE(p.Process(Down()));
  EXPECT_EQ(p.Explain(), "1 node not available for new tasks; insufficient resources on 1 node");
}

TEST(Pipeline, APassingNodeResetsTheCounts) {
  Pipeline p;
  TaskSpec spec;
  spec.reservations.memory_bytes = 100;
  p.SetTask(spec, 0);
  EXPECT_FALSE(p.Process(Down()));
  EXPECT_TRUE(p.Process(Ready(100)));
  EXPECT_EQ(p.Explain(), "");
  EXPECT_FALSE(p.Process(Ready(10)));
  EXPECT_EQ(p.Explain(), "insufficient resources on 1 node");
}

TEST(Pipeline, SetTaskResetsTheCountsAndEnablesOnlyNeededFilters) {
  Pipeline p;
  TaskSpec needs_memory;
  needs_memory.reservations.memory_bytes = 100;
  p.SetTask(needs_memory, 0);
  EXPECT_FALSE(p.Process(Ready(10)));
  TaskSpec empty;
  p.SetTask(empty, 0);
  EXPECT_EQ(p.Explain(), "");
  EXPECT_TRUE(p.Process(Ready(10)));  // resources filter no longer takes part
}

TEST(Pipeline, NodeOnlyScopeLeavesOutWhatDependsOnOtherTasks) {
  Pipeline p;
  TaskSpec spec;
  spec.reservations.memory_bytes = 100;
  spec.constraints = {"node.id==n"};
  p.SetTask(spec, 0, Pipeline::Scope::kNodeOnly);
  EXPECT_TRUE(p.Process(Ready(10)));  // too small, but resources do not take part
  EXPECT_FALSE(p.Process(Down()));    // not ready, and not "n"
  EXPECT_EQ(p.Explain(), "1 node not available for new tasks");
  p.SetTask(spec, 0);
  EXPECT_FALSE(p.Process(Ready(10)));
  EXPECT_EQ(p.Explain(), "insufficient resources on 1 node");
}

TEST(Pipeline, EveryFilterInSpecOrder) {
  // A node failing everything is counted against the first filter only.
  Pipeline p;
  TaskSpec spec;
  spec.reservations.milli_cpu = 1;
  spec.networks = {"overlay"};
  spec.constraints = {"node.labels.x==y"};
  spec.platforms = {{"linux", ""}};
  spec.ports = {{Protocol::kTcp, 80, true}};
  spec.max_replicas_per_node = 1;
  p.SetTask(spec, 0);
  Node n;
  n.id = "n";
  n.resources.milli_cpu = 10;
  n.plugins = {{"network", "overlay"}};
  n.labels["x"] = "y";
  n.platform = Platform{"linux", "amd64"};
  EXPECT_TRUE(p.Process(NodeInfo(n)));
  n.platform = Platform{"windows", "amd64"};
  EXPECT_FALSE(p.Process(NodeInfo(n)));
  n.labels["x"] = "z";
  EXPECT_FALSE(p.Process(NodeInfo(n)));
  EXPECT_EQ(p.Explain(),
            "scheduling constraints not satisfied on 1 node; unsupported platform on 1 node");
}

}  // namespace
}  // namespace berth::filter
