// Scarce nodes and spread preferences on the three-phase path, end to end
// with real agents in process (docs/threephase.md, "Scarce nodes" and
// "Spread preferences"). One sampler and one decision thread, seeded agents
// and instance; the one thing left to timing is how far the sampler runs
// ahead of the decisions (and the least-recently-used score), which the
// assertions do not depend on.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "agent/agent.h"
#include "threephase/scheduler_instance.h"

namespace berth::threephase {
namespace {

constexpr int kAgents = 4, kCloudPerAgent = 12, kEdgePerAgent = 6;
constexpr int kEdgeSlots = kAgents * kEdgePerAgent * 2;  // 1 CPU nodes, 0.5 CPU tasks
constexpr int kUnconstrained = 200;                      // of 4 * 12 * 8 cloud slots

Node CloudNode(const std::string& id) {
  Node n;
  n.id = id;
  n.resources = {4'000, 8LL << 30, {}};
  return n;
}

Node EdgeNode(const std::string& id) {
  Node n;
  n.id = id;
  n.resources = {1'000, 2LL << 30, {}};
  n.labels = {{"geo-location", "52.52,13.405"}, {"battery-level", "80"}};
  return n;
}

// Agents over `nodes_of(agent)`, with their transports.
struct Cluster {
  Cluster(int agents, const std::function<std::vector<Node>(int)>& nodes_of,
          agent::AgentOptions base) {
    for (int a = 0; a < agents; ++a) {
      agent::AgentOptions options = base;
      options.id = "agent-" + std::to_string(a);
      options.seed = static_cast<uint64_t>(a + 1);
      this->agents.push_back(std::make_unique<agent::Agent>(options, nodes_of(a)));
      transports.push_back(std::make_unique<InProcessTransport>(*this->agents.back()));
      views.push_back(transports.back().get());
    }
  }
  std::vector<std::unique_ptr<agent::Agent>> agents;
  std::vector<std::unique_ptr<InProcessTransport>> transports;
  std::vector<AgentTransport*> views;
};

std::vector<Node> EdgeClusterNodes(int agent) {
  std::vector<Node> nodes;
  const std::string prefix = "a" + std::to_string(agent) + "-";
  for (int i = 0; i < kCloudPerAgent; ++i)
    nodes.push_back(CloudNode(prefix + "c" + std::to_string(i)));
  for (int i = 0; i < kEdgePerAgent; ++i)
    nodes.push_back(EdgeNode(prefix + "e" + std::to_string(i)));
  return nodes;
}

agent::PlacementTask HalfCpuTask(std::string id, bool edge) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations = {500, 512LL << 20, {}};
  agent::PlacementTask t{std::move(id), 0, spec, {}, {}, {}};
  if (edge) {
    t.edge.target = agent::GeoPoint{52'520'000, 13'405'000};
    t.edge.min_battery_percent = 30;
  }
  return t;
}

struct RunResult {
  int bound = 0, failed = 0, edge_failed = 0;
  int failed_with_room = 0;  // failed while some agent had a node that passes
};

// Unconstrained tasks first (so they meet empty edge nodes), then exactly as
// many edge tasks as edge slots.
// The agents score as the instance does.
RunResult RunEdgeWorkload(agent::ResourceScoring scoring, agent::AgentOptions agents) {
  agents.scoring = scoring;
  Cluster cluster(kAgents, EdgeClusterNodes, agents);
  SchedulerOptions options;
  options.scoring = scoring;
  options.node_basis_points = 5'000;  // 9 of an agent's 18 nodes per sample
  options.samplers = options.decision_pipelines = 1;
  options.seed = 7;
  std::mutex mu;
  std::vector<std::string> failed;
  RunResult result;
  SchedulerInstance instance(cluster.views, options, [&](const TaskOutcome& o) {
    std::lock_guard lock(mu);
    if (o.bound) return void(++result.bound);
    failed.push_back(o.task_id);
  });
  std::map<std::string, agent::PlacementTask> tasks;
  for (int i = 0; i < kUnconstrained; ++i)
    tasks.emplace("u" + std::to_string(i), HalfCpuTask("u" + std::to_string(i), false));
  for (int i = 0; i < kEdgeSlots; ++i)
    tasks.emplace("e" + std::to_string(i), HalfCpuTask("e" + std::to_string(i), true));
  instance.Start();
  for (int i = 0; i < kUnconstrained; ++i) instance.Submit(tasks.at("u" + std::to_string(i)));
  for (int i = 0; i < kEdgeSlots; ++i) instance.Submit(tasks.at("e" + std::to_string(i)));
  EXPECT_TRUE(instance.WaitIdle(std::chrono::seconds(60)));
  instance.Stop();
  result.failed = static_cast<int>(failed.size());
  for (const std::string& id : failed) {
    result.edge_failed += id[0] == 'e';
    agent::SampleRequest request{tasks.at(id), 10'000, Duration{1'000}, ""};
    for (const auto& a : cluster.agents)
      if (!a->Sample(request).nodes.empty()) {
        ++result.failed_with_room;
        break;
      }
  }
  for (const auto& a : cluster.agents)
    for (uint32_t n = 0; n < a->nodes().size(); ++n) EXPECT_FALSE(a->nodes().Overcommitted(n));
  return result;
}

class ScarceEdge : public ::testing::TestWithParam<agent::ResourceScoring> {};

TEST_P(ScarceEdge, NoTaskFailsWhileANodeCouldTakeIt) {
  const RunResult r = RunEdgeWorkload(GetParam(), agent::AgentOptions{});
  EXPECT_EQ(r.failed_with_room, 0);
  // The unconstrained tasks kept off the edge nodes, so every edge task fit.
  EXPECT_EQ(r.edge_failed, 0);
  EXPECT_EQ(r.bound, kUnconstrained + kEdgeSlots);
}

INSTANTIATE_TEST_SUITE_P(EveryScoring, ScarceEdge,
                         ::testing::Values(agent::ResourceScoring::kLeastAllocated,
                                           agent::ResourceScoring::kMostAllocated),
                         [](const auto& info) {
                           return std::string(info.param == agent::ResourceScoring::kLeastAllocated
                                                  ? "Least"
                                                  : "Most");
                         });

// The scenario is not vacuous: without the penalty, packing sends the
// unconstrained tasks to the (fuller-looking) edge nodes first. (Without
// the least-recently-used score too, which depends on the clock and would
// sometimes steer them to cloud nodes never bound.)
TEST(ScarceEdge, WithoutThePenaltyPackingStarvesTheEdgeTasks) {
  agent::AgentOptions no_penalty;
  no_penalty.scarcity_weight = 0;
  no_penalty.lru_weight = 0;
  const RunResult r = RunEdgeWorkload(agent::ResourceScoring::kMostAllocated, no_penalty);
  EXPECT_GT(r.edge_failed, 0);
  EXPECT_EQ(r.failed_with_room, 0);  // widening: they failed for want of room
}

// Spread over the values of a label with unequal node counts per value
// (zone a: 8 nodes, b: 3, c: 1 per agent; room for every task everywhere).
std::vector<Node> ZonedNodes(int agent) {
  std::vector<Node> nodes;
  for (int i = 0; i < 12; ++i) {
    Node n = CloudNode("a" + std::to_string(agent) + "-n" + std::to_string(i));
    n.labels["zone"] = i < 8 ? "a" : i < 11 ? "b" : "c";
    nodes.push_back(n);
  }
  return nodes;
}

// max - min of the tasks per zone after `tasks` tasks with spread=node.labels.zone.
int SpreadRange(int64_t node_basis_points, int tasks, agent::ResourceScoring scoring,
                bool with_preference) {
  Cluster cluster(2, ZonedNodes, agent::AgentOptions{});
  SchedulerOptions options;
  options.scoring = scoring;
  options.node_basis_points = node_basis_points;
  options.samplers = options.decision_pipelines = 1;
  options.seed = 11;
  std::map<std::string, int> per_zone = {{"a", 0}, {"b", 0}, {"c", 0}};
  std::mutex mu;
  SchedulerInstance instance(cluster.views, options, [&](const TaskOutcome& o) {
    std::lock_guard lock(mu);
    ASSERT_TRUE(o.bound) << o.reason;
    const int index = std::stoi(o.node_id.substr(o.node_id.find("-n") + 2));
    ++per_zone[index < 8 ? "a" : index < 11 ? "b" : "c"];
  });
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations = {100, 64LL << 20, {}};
  if (with_preference) spec->preferences.push_back(PlacementPreference::Spread("node.labels.zone"));
  instance.Start();
  for (int i = 0; i < tasks; ++i) instance.Submit({"t" + std::to_string(i), 0, spec, {}, {}, {}});
  EXPECT_TRUE(instance.WaitIdle(std::chrono::seconds(60)));
  instance.Stop();
  const auto [lo, hi] = std::minmax_element(per_zone.begin(), per_zone.end(),
                                            [](auto& x, auto& y) { return x.second < y.second; });
  return hi->second - lo->second;
}

TEST(Spread, EvenAcrossLabelValuesWhenSamplesHoldEveryValue) {
  // Every node sampled: exactly the full view's split (60 / 3 zones).
  for (auto scoring :
       {agent::ResourceScoring::kLeastAllocated, agent::ResourceScoring::kMostAllocated})
    EXPECT_LE(SpreadRange(10'000, 60, scoring, true), 1);
}

TEST(Spread, EvenIshFromPartialSamples) {
  // Part of one agent's nodes per sample (Cp 50% of two agents): zone c (one
  // node per agent) is missing from many samples, so the spread is close to,
  // not exactly, even. Printed for docs/threephase.md.
  for (int64_t np : {1'000, 2'500, 5'000}) {
    const int with = SpreadRange(np, 60, agent::ResourceScoring::kMostAllocated, true);
    const int without = SpreadRange(np, 60, agent::ResourceScoring::kMostAllocated, false);
    const int least = SpreadRange(np, 60, agent::ResourceScoring::kLeastAllocated, true);
    std::printf(
        "spread max-min, Np %lld bp, 60 tasks: most %d with the preference (%d without), "
        "least %d with\n",
        static_cast<long long>(np), with, without, least);
    if (np < 2'500) continue;  // one node per sample: nothing to choose from
    EXPECT_LE(with, 6);
    EXPECT_LT(with, without);
  }
}

}  // namespace
}  // namespace berth::threephase
