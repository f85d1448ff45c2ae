#include "agent/agent.h"

#include <gtest/gtest.h>

#include <thread>

namespace berth::agent {
namespace {

std::vector<Node> MakeNodes(int count, int64_t cpu, int64_t memory) {
  std::vector<Node> nodes;
  for (int i = 0; i < count; ++i) {
    Node n;
    n.id = "n" + std::to_string(i);
    n.resources = {cpu, memory, {}};
    nodes.push_back(n);
  }
  return nodes;
}

PlacementTask Task(int64_t cpu, int64_t memory = 0) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = cpu;
  spec->reservations.memory_bytes = memory;
  return {"t", 0, spec, {}, {}, {}};
}

TEST(Agent, SampleReturnsOnlyEligibleNodesWithScores) {
  Agent agent({}, MakeNodes(50, 1000, 1 << 30));
  SampleRequest request{Task(400), 1000, Duration{1000}, {}};  // 10%: 5 nodes
  SampleResponse response = agent.Sample(request);
  ASSERT_EQ(response.nodes.size(), 5u);
  for (const NodeSample& s : response.nodes) {
    EXPECT_EQ(s.agent_id, "agent");
    EXPECT_EQ(s.free_milli_cpu, 1000);
    EXPECT_GT(s.weight_sum, 0);
    EXPECT_LE(s.score_sum, 100 * s.weight_sum);
  }
  SampleResponse none = agent.Sample({Task(4000), 1000, Duration{1000}, {}});
  EXPECT_TRUE(none.nodes.empty());
  EXPECT_EQ(none.looked_at, 50u);  // looked at every node once, then gave up
}

TEST(Agent, ReservationsAreImmediateAndRollBackExactly) {
  Agent agent({}, MakeNodes(1, 1000, 1000));
  CommitResponse first = agent.Commit({Task(600, 100), 0, "n0"});
  EXPECT_EQ(first.outcome, CommitOutcome::kBound);
  CommitResponse second = agent.Commit({Task(600, 100), 0, "n0"});
  EXPECT_EQ(second.outcome, CommitOutcome::kConflict);
  EXPECT_EQ(second.reason, "insufficient cpu");
  // The conflict gave back exactly its reservation.
  agent.nodes().Read(0, [](const AgentNode& n) {
    EXPECT_EQ(n.info.available_milli_cpu(), 400);
    EXPECT_EQ(n.info.available_memory_bytes(), 900);
    EXPECT_EQ(n.bound_tasks, 1u);
  });
  EXPECT_EQ(agent.Commit({Task(400, 900), 0, "n0"}).outcome, CommitOutcome::kBound);
  EXPECT_FALSE(agent.nodes().Overcommitted(0));
  EXPECT_EQ(agent.locker().size(), 0u);
}

TEST(Agent, ReleaseGivesABindingBackOnce) {
  Agent agent({}, MakeNodes(1, 1000, 1000));
  PlacementTask a = Task(700, 100), b = Task(700, 100);
  a.id = "a";
  b.id = "b";
  ASSERT_EQ(agent.Commit({a, 0, "n0"}).outcome, CommitOutcome::kBound);
  EXPECT_EQ(agent.Commit({b, 0, "n0"}).outcome, CommitOutcome::kConflict);
  EXPECT_EQ(agent.bindings(), 1u);
  EXPECT_TRUE(agent.Release("a"));
  EXPECT_FALSE(agent.Release("a"));  // already given back
  EXPECT_FALSE(agent.Release("b"));  // never bound
  agent.nodes().Read(0, [](const AgentNode& n) {
    EXPECT_EQ(n.info.available_milli_cpu(), 1000);
    EXPECT_EQ(n.info.available_memory_bytes(), 1000);
    EXPECT_EQ(n.bound_tasks, 0u);
    EXPECT_EQ(n.bound_milli_cpu, 0);
  });
  EXPECT_EQ(agent.Commit({b, 0, "n0"}).outcome, CommitOutcome::kBound);
  EXPECT_EQ(agent.counters().released.load(), 1u);
}

TEST(Agent, ANamedNodeIsTheOnlyOneLookedAtAndARejectionSaysWhy) {
  std::vector<Node> nodes = MakeNodes(3, 1000, 1 << 30);
  nodes[2].state = NodeState::kDown;
  Agent agent({}, nodes);
  SampleResponse one = agent.Sample({Task(400), 1, Duration{1000}, "n1"});
  ASSERT_EQ(one.nodes.size(), 1u);
  EXPECT_EQ(one.nodes[0].node_id, "n1");
  EXPECT_EQ(one.looked_at, 1u);
  EXPECT_EQ(agent.Sample({Task(4000), 1, Duration{1000}, "n1"}).reason,
            "node 'n1': insufficient resources on 1 node");
  EXPECT_EQ(agent.Sample({Task(400), 1, Duration{1000}, "n2"}).reason,
            "node 'n2': 1 node not available for new tasks");
  EXPECT_EQ(agent.Sample({Task(400), 1, Duration{1000}, "n9"}).reason,
            "agent agent has no node 'n9'");
}

TEST(Agent, EligibleNodesAreThoseTheNodeAloneAdmits) {
  std::vector<Node> nodes = MakeNodes(4, 1000, 1 << 30);
  nodes[0].labels["az"] = nodes[1].labels["az"] = nodes[3].labels["az"] = "a";
  nodes[3].availability = NodeAvailability::kDrain;
  Agent agent({}, nodes);
  TaskSpec spec;
  spec.constraints = {"node.labels.az==a"};
  spec.reservations.milli_cpu = 5000;  // fits nowhere: resources do not count here
  EXPECT_EQ(agent.Eligible(spec), (std::vector<std::string>{"n0", "n1"}));
}

TEST(Agent, BoundTasksListsEachBoundTaskOnce) {
  Agent agent({}, MakeNodes(2, 1000, 1000));
  PlacementTask a = Task(100), b = Task(100);
  a.id = "a";
  b.id = "b";
  ASSERT_EQ(agent.Commit({b, 0, "n0"}).outcome, CommitOutcome::kBound);
  ASSERT_EQ(agent.Commit({a, 0, "n0"}).outcome, CommitOutcome::kBound);
  ASSERT_EQ(agent.Commit({a, 1, "n1"}).outcome, CommitOutcome::kBound);  // a retry after a crash
  EXPECT_EQ(agent.BoundTasks(), (std::vector<std::string>{"a", "b"}));
  agent.Release("a");
  EXPECT_EQ(agent.BoundTasks(), (std::vector<std::string>{"b"}));
}

TEST(Agent, ACommitFindsItsNodeByIdWhenTheIndexNamesAnother) {
  Agent agent({}, MakeNodes(3, 1000, 1000));
  EXPECT_EQ(agent.Commit({Task(100), 0, "n2"}).outcome, CommitOutcome::kBound);
  agent.nodes().Read(2, [](const AgentNode& n) { EXPECT_EQ(n.bound_tasks, 1u); });
  agent.nodes().Read(0, [](const AgentNode& n) { EXPECT_EQ(n.bound_tasks, 0u); });
  EXPECT_EQ(agent.Commit({Task(100), 7, "n9"}).outcome, CommitOutcome::kError);
}

TEST(Agent, NodesJoinUpToTheCapacityAndAnUpdateKeepsWhatIsBound) {
  AgentOptions options;
  options.max_nodes = 2;
  Agent agent(options, {});
  EXPECT_TRUE(agent.Sample({Task(100), 10'000, Duration{1000}, {}}).nodes.empty());
  std::vector<Node> nodes = MakeNodes(3, 1000, 1 << 30);
  ASSERT_TRUE(agent.UpsertNode(nodes[0]).ok());
  ASSERT_EQ(agent.Commit({Task(600), 0, "n0"}).outcome, CommitOutcome::kBound);
  // The node reports more cpu: what is bound stays taken.
  nodes[0].resources.milli_cpu = 2000;
  EXPECT_EQ(*agent.UpsertNode(nodes[0]), 0u);
  agent.nodes().Read(0, [](const AgentNode& n) { EXPECT_EQ(n.info.available_milli_cpu(), 1400); });
  EXPECT_EQ(*agent.UpsertNode(nodes[1]), 1u);
  Result<uint32_t> full = agent.UpsertNode(nodes[2]);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.status().message().find("--max-nodes"), std::string::npos);
  EXPECT_EQ(agent.Sample({Task(100), 10'000, Duration{1000}, {}}).nodes.size(), 2u);
}

TEST(Agent, ANodeThatWentDownIsSkippedBySamplesAndRefusedByCommits) {
  Agent agent({}, MakeNodes(2, 1000, 1 << 30));
  Node down = MakeNodes(1, 1000, 1 << 30)[0];
  down.state = NodeState::kDown;
  ASSERT_TRUE(agent.UpsertNode(down).ok());
  SampleResponse sample = agent.Sample({Task(100), 10'000, Duration{1000}, {}});
  ASSERT_EQ(sample.nodes.size(), 1u);
  EXPECT_EQ(sample.nodes[0].node_id, "n1");
  CommitResponse refused = agent.Commit({Task(100), 0, "n0"});
  EXPECT_EQ(refused.outcome, CommitOutcome::kConflict);
  EXPECT_EQ(refused.reason, "node 'n0' is down");
  agent.nodes().Read(0, [](const AgentNode& n) { EXPECT_EQ(n.info.available_milli_cpu(), 1000); });
}

TEST(Agent, ErrorsAreDistinctFromConflicts) {
  Agent agent({}, MakeNodes(2, 1000, 1000));
  EXPECT_EQ(agent.Commit({Task(1), 5, "n5"}).outcome, CommitOutcome::kError);  // no such node
  EXPECT_EQ(agent.counters().errors.load(), 1u);
  EXPECT_EQ(agent.counters().conflicts.load(), 0u);
}

TEST(Agent, HostPortsConflict) {
  Agent agent({}, MakeNodes(1, 1000, 1000));
  auto spec = std::make_shared<TaskSpec>();
  spec->ports = {{Protocol::kTcp, 80, true}};
  PlacementTask web{"web", 0, spec, {}, {}, {}};
  EXPECT_EQ(agent.Commit({web, 0, "n0"}).outcome, CommitOutcome::kBound);
  CommitResponse again = agent.Commit({web, 0, "n0"});
  EXPECT_EQ(again.outcome, CommitOutcome::kConflict);
  EXPECT_EQ(again.reason, "host port tcp/80 already in use");
}

// N concurrent commits on one node: at most capacity / demand bind, the rest
// conflict, nothing is over-committed, and the lock map is empty afterwards.
TEST(Agent, ConcurrentCommitsOnOneNode) {
  AgentOptions options;
  options.binding_pipelines = 3;
  Agent agent(options, MakeNodes(1, 1000, 1 << 20));
  constexpr int kThreads = 8, kPerThread = 25;  // 200 commits of 30 milli-CPU
  std::atomic<int> bound{0}, conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        CommitResponse r = agent.Commit({Task(30), 0, "n0"});
        (r.outcome == CommitOutcome::kBound ? bound : conflicts).fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(bound.load(), 1000 / 30);  // at most capacity / demand
  EXPECT_GE(bound.load(), 1);
  EXPECT_EQ(bound.load() + conflicts.load(), kThreads * kPerThread);
  // In-flight reservations may have made some commits conflict early; one
  // at a time, the rest of the capacity still binds, exactly up to it.
  while (agent.Commit({Task(30), 0, "n0"}).outcome == CommitOutcome::kBound) bound.fetch_add(1);
  EXPECT_EQ(bound.load(), 1000 / 30);
  EXPECT_FALSE(agent.nodes().Overcommitted(0));
  EXPECT_EQ(agent.locker().size(), 0u);
  agent.nodes().Read(
      0, [](const AgentNode& n) { EXPECT_EQ(n.info.available_milli_cpu(), 1000 - 33 * 30); });
}

}  // namespace
}  // namespace berth::agent
