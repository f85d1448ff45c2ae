#include <gtest/gtest.h>

#include <set>

#include "agent/agent.h"
#include "agent/random_sampling.h"
#include "agent/round_robin_sampling.h"

namespace berth::agent {
namespace {

TEST(SampleSize, FloorOfBasisPointsWithAMinimumOfOne) {
  EXPECT_EQ(Agent::SampleSize(400, 2000), 80u);   // 4% of 2000
  EXPECT_EQ(Agent::SampleSize(400, 2010), 80u);   // floor(80.4)
  EXPECT_EQ(Agent::SampleSize(400, 24), 1u);      // floor(0.96) = 0 -> at least 1
  EXPECT_EQ(Agent::SampleSize(0, 100), 1u);
  EXPECT_EQ(Agent::SampleSize(20000, 10), 10u);   // never more than the nodes
  EXPECT_EQ(Agent::SampleSize(-5, 10), 1u);
}

TEST(RandomSampling, EveryNodeOnceBeforeAnyRepeat) {
  RandomSampling strategy(42);
  for (uint32_t nodes : {1u, 2u, 3u, 10u, 97u, 1000u}) {
    for (int request = 0; request < 20; ++request) {
      SampleCursor cursor = strategy.Begin(nodes);
      std::set<uint32_t> seen;
      for (uint32_t i = 0; i < nodes; ++i) {
        const uint32_t node = strategy.Next(cursor, nodes);
        ASSERT_LT(node, nodes);
        ASSERT_TRUE(seen.insert(node).second) << "repeat within one request, n=" << nodes;
      }
    }
  }
}

TEST(RandomSampling, RequestsStartInDifferentPlaces) {
  RandomSampling strategy(7);
  std::set<uint32_t> firsts;
  for (int request = 0; request < 50; ++request) {
    SampleCursor cursor = strategy.Begin(1000);
    firsts.insert(strategy.Next(cursor, 1000));
  }
  EXPECT_GT(firsts.size(), 40u);
}

TEST(RoundRobinSampling, OnePositionSharedByAllPipelines) {
  RoundRobinSampling strategy;
  // Two "pipelines" with their own cursors interleave over one position.
  SampleCursor a = strategy.Begin(10), b = strategy.Begin(10);
  std::vector<uint32_t> got;
  for (int i = 0; i < 5; ++i) {
    got.push_back(strategy.Next(a, 10));
    got.push_back(strategy.Next(b, 10));
  }
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  SampleCursor c = strategy.Begin(10);
  EXPECT_EQ(strategy.Next(c, 10), 0u);  // wraps only after every node
}

TEST(RoundRobinSampling, ConsecutiveAgentRequestsGetDifferentNodes) {
  std::vector<Node> nodes;
  for (int i = 0; i < 100; ++i) {
    Node n;
    n.id = "n" + std::to_string(i);
    n.resources = {1000, 1 << 30, {}};
    nodes.push_back(n);
  }
  AgentOptions options;
  options.sampling = SamplingKind::kRoundRobin;
  Agent agent(options, nodes);
  SampleRequest request;
  request.task.spec = std::make_shared<TaskSpec>();
  request.basis_points = 1000;  // 10 nodes each
  std::set<std::string> seen;
  for (int r = 0; r < 10; ++r)
    for (const NodeSample& s : agent.Sample(request).nodes) EXPECT_TRUE(seen.insert(s.node_id).second);
  EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace berth::agent
