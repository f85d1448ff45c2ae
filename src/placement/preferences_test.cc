// Preferences beyond SwarmKit (docs/placement.md): pack-into, weighted
// spread, binpack, soft constraints and affinity. Worked examples (each also in
// docs/placement.md) and properties over random clusters.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "placement/scheduler.h"
#include "placement/test_cluster.h"

namespace berth::placement {
namespace {

using testing::MakeNode;
using testing::NodeWithCpu;
using testing::SpecReservingCpu;
using testing::TestCluster;

PlacementPreference Spread(std::string descriptor,
                           std::vector<std::pair<std::string, uint32_t>> weights = {},
                           uint32_t other = 0) {
  PlacementPreference p = PlacementPreference::Spread(std::move(descriptor));
  p.weights = std::move(weights);
  p.other_weight = other;
  return p;
}
PlacementPreference Pack(std::string descriptor) {
  return PlacementPreference::Pack(std::move(descriptor));
}

Node Labelled(std::string id, int64_t milli_cpu, Labels labels) {
  Node n = NodeWithCpu(std::move(id), milli_cpu);
  n.labels = std::move(labels);
  return n;
}

// Tasks a pass placed, by the value of a node label.
std::map<std::string, int> CountsByLabel(const TestCluster& c, const PassResult& r,
                                         const std::string& label) {
  std::map<std::string, int> out;
  for (const Decision& d : r.decisions) {
    if (d.node == kNoNode) continue;
    const Labels& labels = c.state.node(d.node).node().labels;
    auto it = labels.find(label);
    ++out[it == labels.end() ? "" : it->second];
  }
  return out;
}

size_t Pending(const PassResult& r) {
  size_t pending = 0;
  for (const Decision& d : r.decisions) pending += d.node == kNoNode;
  return pending;
}

// Spread over data centres, then pack into racks: each data centre gets
// half, and within each the tasks gather in one rack (the first in byte
// order, as none holds any yet).
TEST(PackInto, SpreadOverDatacentresThenPackIntoRacks) {
  TestCluster c;
  c.Add(Labelled("a1", 2000, {{"dc", "east"}, {"rack", "r1"}}));
  c.Add(Labelled("a2", 2000, {{"dc", "east"}, {"rack", "r1"}}));
  c.Add(Labelled("b1", 2000, {{"dc", "east"}, {"rack", "r2"}}));
  c.Add(Labelled("b2", 2000, {{"dc", "east"}, {"rack", "r2"}}));
  c.Add(Labelled("c1", 2000, {{"dc", "west"}, {"rack", "r3"}}));
  c.Add(Labelled("c2", 2000, {{"dc", "west"}, {"rack", "r4"}}));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Spread("node.labels.dc"), Pack("node.labels.rack")};
  c.AddPending("t", "S", spec, 6);
  auto r = c.Schedule();
  EXPECT_EQ(CountsByLabel(c, r, "rack"),
            (std::map<std::string, int>{{"r1", 3}, {"r3", 2}, {"r4", 1}}));
  EXPECT_EQ(CountsByLabel(c, r, "dc"), (std::map<std::string, int>{{"east", 3}, {"west", 3}}));
}

// The rack that already holds the service's tasks is filled first; only
// when it is full does the next one get any.
TEST(PackInto, TheBranchHoldingTheServiceIsFilledFirst) {
  TestCluster c;
  c.Add(Labelled("a", 2000, {{"rack", "r1"}}));
  c.Add(Labelled("b", 2000, {{"rack", "r2"}}));
  c.Add(Labelled("u", 2000, {}));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Pack("node.labels.rack")};
  c.AddTask("old", "S", spec, TaskState::kRunning, "b");
  c.AddPending("t", "S", spec, 3);
  auto r = c.Schedule();
  // r2 has room for one more; then r1 (labelled) before the unlabelled node.
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"a", 2}, {"b", 1}}));
}

// Weights 3:1 split 8 tasks 6/2; the unlabelled node (no "*" weight) gets
// none while a weighted branch has room.
TEST(WeightedSpread, TasksFollowTheWeights) {
  TestCluster c;
  for (int i = 0; i < 4; ++i) c.Add(Labelled("e" + std::to_string(i), 8000, {{"az", "east"}}));
  for (int i = 0; i < 4; ++i) c.Add(Labelled("w" + std::to_string(i), 8000, {{"az", "west"}}));
  c.Add(Labelled("u", 8000, {}));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Spread("node.labels.az", {{"east", 3}, {"west", 1}})};
  c.AddPending("t", "S", spec, 8);
  auto r = c.Schedule();
  EXPECT_EQ(CountsByLabel(c, r, "az"), (std::map<std::string, int>{{"east", 6}, {"west", 2}}));
}

// Weight-0 branches (here the unlabelled node) take tasks only once every
// weighted branch is full.
TEST(WeightedSpread, UnweightedValuesTakeOnlyTheOverflow) {
  TestCluster c;
  c.Add(Labelled("e", 2000, {{"az", "east"}}));
  c.Add(Labelled("w", 2000, {{"az", "west"}}));
  c.Add(Labelled("u", 8000, {}));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Spread("node.labels.az", {{"east", 1}, {"west", 1}})};
  c.AddPending("t", "S", spec, 6);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"e", 2}, {"u", 2}, {"w", 2}}));
}

// "*" gives every value not listed, and nodes missing the label, a weight.
TEST(WeightedSpread, TheStarWeightCoversOtherValuesAndMissingLabels) {
  TestCluster c;
  c.Add(Labelled("e", 8000, {{"az", "east"}}));
  c.Add(Labelled("n", 8000, {{"az", "north"}}));
  c.Add(Labelled("u", 8000, {}));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Spread("node.labels.az", {{"east", 2}}, 1)};
  c.AddPending("t", "S", spec, 8);
  auto r = c.Schedule();
  // T = 8, W = 4: east 4, "" 2, north 2.
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"e", 4}, {"n", 2}, {"u", 2}}));
}

// pack=node.id is binpack: the node with the least room left first, each
// filled before the next; ties (all empty) in node id order.
TEST(Binpack, FillsANodeBeforeTheNext) {
  TestCluster c;
  c.Add(NodeWithCpu("n1", 2000));
  c.Add(NodeWithCpu("n2", 4000));
  c.Add(NodeWithCpu("n3", 4000));
  c.AddTask("busy", "other", SpecReservingCpu(3000), TaskState::kRunning, "n3");
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Pack("node.id")};
  c.AddPending("t", "S", spec, 4);
  auto r = c.Schedule();
  // n3 has a quarter left (fullest): 1 task; then n1 and n2 tie at all
  // free, n1 by id: 2 tasks; then n2: 1.
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n1", 2}, {"n2", 1}, {"n3", 1}}));
}

TEST(Binpack, TheStrategyOptionActsAsATrailingPackOverNodeId) {
  for (bool by_option : {true, false}) {
    TestCluster c;
    for (int i = 0; i < 4; ++i) c.Add(NodeWithCpu("n" + std::to_string(i), 3000));
    auto spec = SpecReservingCpu(1000);
    if (!by_option) spec->preferences = {Pack("node.id")};
    c.AddPending("t", "S", spec, 5);
    SchedulerOptions options;
    if (by_option) options.strategy = PlacementStrategy::kBinpack;
    auto r = c.Schedule(testing::At(1000), options);
    EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n0", 3}, {"n1", 2}})) << by_option;
  }
}

// An explicit spread=node.id keeps SwarmKit's order under the binpack
// strategy.
TEST(Binpack, SpreadOverNodeIdOverridesTheStrategy) {
  TestCluster c;
  for (int i = 0; i < 3; ++i) c.Add(NodeWithCpu("n" + std::to_string(i), 3000));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Spread("node.id")};
  c.AddPending("t", "S", spec, 3);
  SchedulerOptions options;
  options.strategy = PlacementStrategy::kBinpack;
  auto r = c.Schedule(testing::At(1000), options);
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n0", 1}, {"n1", 1}, {"n2", 1}}));
}

// prefer=node.labels.disk==ssd: matching nodes first, the others only once
// they are full, and a task placed on one that does not match says so.
TEST(SoftConstraints, MatchingNodesFirstThenTheOthersWithAReason) {
  TestCluster c;
  c.Add(Labelled("hdd1", 4000, {{"disk", "hdd"}}));
  c.Add(Labelled("ssd1", 1000, {{"disk", "ssd"}}));
  c.Add(Labelled("ssd2", 1000, {{"disk", "ssd"}}));
  auto spec = SpecReservingCpu(1000);
  spec->preferred_constraints = {"node.labels.disk==ssd"};
  c.AddPending("t", "S", spec, 3);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"hdd1", 1}, {"ssd1", 1}, {"ssd2", 1}}));
  EXPECT_EQ(c.MessageOf(r, "t0"), "scheduler assigned task to node");
  EXPECT_EQ(c.MessageOf(r, "t2"),
            "scheduler assigned task to node (preference not satisfied: node.labels.disk==ssd)");
}

ServiceAffinity With(std::string service, bool soft = false) {
  return {std::move(service), false, soft};
}
ServiceAffinity Without(std::string service, bool soft = false) {
  return {std::move(service), true, soft};
}

// Hard affinity: only nodes holding the other service's tasks; the others
// are explained.
TEST(Affinity, RunsOnlyWhereTheOtherServiceRuns) {
  TestCluster c;
  for (const char* id : {"n1", "n2", "n3"}) c.Add(NodeWithCpu(id, 4000));
  c.AddTask("db.1", "db", SpecReservingCpu(1000), TaskState::kRunning, "n2");
  auto spec = SpecReservingCpu(1000);
  spec->affinities = {With("db")};
  c.AddPending("web", "web", spec, 4);
  auto big = SpecReservingCpu(1000);
  big->affinities = {With("db")};
  c.AddPending("big", "big", big, 1);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n2", 3}}));
  // Counts after the last node that passed (n2, before it filled up).
  EXPECT_EQ(c.MessageOf(r, "web3"), "no suitable node (insufficient resources on 1 node)");
  EXPECT_EQ(c.MessageOf(r, "big0"),
            "no suitable node (affinity not satisfied on 2 nodes; insufficient resources on 1 "
            "node)");
}

// An affinity with a service no node has ever held fits nowhere; an
// anti-affinity with it fits everywhere.
TEST(Affinity, AnUnknownServiceIsHeldNowhere) {
  TestCluster c;
  c.Add(NodeWithCpu("n1", 4000));
  auto with = SpecReservingCpu(100);
  with->affinities = {With("ghost")};
  c.AddTask("a", "a", with);
  auto without = SpecReservingCpu(100);
  without->affinities = {Without("ghost")};
  c.AddTask("b", "b", without);
  auto r = c.Schedule();
  EXPECT_EQ(c.MessageOf(r, "a"), "no suitable node (affinity not satisfied on 1 node)");
  EXPECT_EQ(c.Placements(r)["b"], "n1");
}

// Anti-affinity with the service itself: one task per node, counting the
// tasks placed earlier in the same pass.
TEST(Affinity, AntiAffinityWithItselfPutsOnePerNode) {
  TestCluster c;
  for (const char* id : {"n1", "n2", "n3"}) c.Add(NodeWithCpu(id, 4000));
  auto spec = SpecReservingCpu(100);
  spec->affinities = {Without("web")};
  c.AddPending("web", "web", spec, 4);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n1", 1}, {"n2", 1}, {"n3", 1}}));
  EXPECT_EQ(c.MessageOf(r, "web3"), "no suitable node (affinity not satisfied on 3 nodes)");
}

// Soft forms order nodes: away from the cache's node while others have
// room, then onto it with the reason.
TEST(Affinity, SoftAntiAffinityPrefersOtherNodesAndSaysWhenItCannot) {
  TestCluster c;
  c.Add(NodeWithCpu("n1", 4000));
  c.Add(NodeWithCpu("n2", 1000));
  c.AddTask("cache.1", "cache", SpecReservingCpu(0), TaskState::kRunning, "n1");
  auto spec = SpecReservingCpu(1000);
  spec->affinities = {Without("cache", true)};
  c.AddPending("web", "web", spec, 2);
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["web0"], "n2");
  EXPECT_EQ(c.MessageOf(r, "web0"), "scheduler assigned task to node");
  EXPECT_EQ(c.Placements(r)["web1"], "n1");
  EXPECT_EQ(c.MessageOf(r, "web1"),
            "scheduler assigned task to node (preference not satisfied: anti-affinity with "
            "cache)");
}

// A matching node with room is always used before one that misses a soft
// rule: the spec's walk (which compares a node only with the next) would
// have sent the fifth task to hdd1 while ssd1 had room.
TEST(SoftConstraints, EveryMatchingNodeFillsBeforeAnyOther) {
  TestCluster c;
  c.Add(Labelled("hdd1", 16000, {{"disk", "hdd"}}));
  c.Add(Labelled("ssd1", 3000, {{"disk", "ssd"}}));
  c.Add(Labelled("ssd2", 3000, {{"disk", "ssd"}}));
  auto spec = SpecReservingCpu(1000);
  spec->preferred_constraints = {"node.labels.disk==ssd"};
  c.AddPending("t", "S", spec, 7);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"hdd1", 1}, {"ssd1", 3}, {"ssd2", 3}}));
}

// weights {"*": 1} alone is a weighted spread with equal weights: the
// formula of the weighted split, not the spec's.
TEST(WeightedSpread, AStarWeightAloneUsesTheWeightedSplit) {
  TestCluster c;
  for (const char* az : {"a", "b", "c"}) c.Add(Labelled(az, 8000, {{"az", az}}));
  auto spec = SpecReservingCpu(1000);
  spec->preferences = {Spread("node.labels.az", {}, 1)};
  c.AddTask("old1", "S", spec, TaskState::kRunning, "a");
  c.AddTask("old2", "S", spec, TaskState::kRunning, "a");
  c.AddPending("t", "S", spec, 2);
  auto r = c.Schedule();
  // T = 4: targets 2/1/1 by largest remainder (ties in branch order).
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"b", 1}, {"c", 1}}));
}

// ---- Properties over random clusters ----

struct RandomCluster {
  explicit RandomCluster(uint32_t seed) : g(seed) {}
  std::mt19937 g;
  int Between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }

  // 5..40 nodes with 1..8 CPUs, labels az (a..d, sometimes missing) and
  // rack (r0..r5), some already running other work.
  void Fill(TestCluster& c) {
    const int nodes = Between(5, 40);
    for (int i = 0; i < nodes; ++i) {
      Labels labels;
      if (Between(0, 9) > 0) labels["az"] = std::string(1, static_cast<char>('a' + Between(0, 3)));
      labels["rack"] = "r" + std::to_string(Between(0, 5));
      if (Between(0, 1)) labels["disk"] = "ssd";
      const std::string id = (i < 10 ? "n0" : "n") + std::to_string(i);
      c.Add(Labelled(id, 1000 * Between(1, 8), labels));
      if (Between(0, 3) == 0)
        c.AddTask(id + "-busy", "other", SpecReservingCpu(1000 * Between(0, 1)),
                  TaskState::kRunning, id);
    }
  }
};

bool Fits(const TestCluster& c, NodeIndex n, int64_t milli_cpu) {
  return c.state.node(n).available_milli_cpu() >= milli_cpu;
}

TEST(Properties, PackUsesANewBranchOnlyWhenTheOthersAreFull) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    TestCluster c;
    RandomCluster random(seed);
    random.Fill(c);
    auto spec = SpecReservingCpu(1000);
    spec->preferences = {Pack("node.labels.rack")};
    c.AddPending("t", "S", spec, random.Between(1, 60));
    auto r = c.Schedule();
    std::set<std::string> used;
    for (const Decision& d : r.decisions)
      if (d.node != kNoNode) used.insert(c.state.node(d.node).node().labels.at("rack"));
    // Every rack used but at most one is full afterwards; with tasks left
    // pending, every rack is.
    size_t with_room = 0;
    for (const std::string& rack : used) {
      bool room = false;
      for (NodeIndex n = 0; n < c.state.node_count(); ++n)
        room = room || (c.state.node(n).node().labels.at("rack") == rack && Fits(c, n, 1000));
      with_room += room;
    }
    EXPECT_LE(with_room, Pending(r) > 0 ? 0u : 1u) << "seed " << seed;
  }
}

TEST(Properties, WeightedSpreadIsWithinOneTaskOfTheWeights) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    RandomCluster random(seed);
    TestCluster c;
    const int values = random.Between(2, 5);
    std::vector<std::pair<std::string, uint32_t>> weights;
    uint32_t total_weight = 0;
    for (int v = 0; v < values; ++v) {
      const std::string value(1, static_cast<char>('a' + v));
      weights.emplace_back(value, random.Between(1, 5));
      total_weight += weights.back().second;
      for (int i = 0; i < 3; ++i)
        c.Add(Labelled(value + std::to_string(i), 100000, {{"az", value}}));
    }
    auto spec = SpecReservingCpu(1000);
    spec->preferences = {Spread("node.labels.az", weights)};
    const int tasks = random.Between(1, 200);
    c.AddPending("t", "S", spec, tasks);
    std::map<std::string, int> counts = CountsByLabel(c, c.Schedule(), "az");
    for (const auto& [value, weight] : weights) {
      const double share = double(tasks) * weight / total_weight;
      EXPECT_LT(std::abs(counts[value] - share), 1.0)
          << "seed " << seed << " value " << value << " got " << counts[value];
    }
  }
}

TEST(Properties, BinpackNeverOvercommitsAndUsesTheFewestNodes) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    std::map<PlacementStrategy, size_t> nodes_used;
    for (PlacementStrategy strategy : {PlacementStrategy::kSpread, PlacementStrategy::kBinpack}) {
      TestCluster c;
      RandomCluster random(seed);
      random.Fill(c);
      c.AddPending("t", "S", SpecReservingCpu(500 * random.Between(1, 4)), random.Between(1, 80));
      SchedulerOptions options;
      options.strategy = strategy;
      nodes_used[strategy] = c.CountsByNode(c.Schedule(testing::At(1000), options)).size();
      for (NodeIndex n = 0; n < c.state.node_count(); ++n)
        EXPECT_GE(c.state.node(n).available_milli_cpu(), 0) << "seed " << seed;
    }
    EXPECT_LE(nodes_used[PlacementStrategy::kBinpack], nodes_used[PlacementStrategy::kSpread])
        << "seed " << seed;
  }
}

TEST(Properties, SoftConstraintsNeverMakeAFeasibleTaskPending) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    std::vector<size_t> pending;
    for (bool soft : {false, true}) {
      TestCluster c;
      RandomCluster random(seed);
      random.Fill(c);
      auto spec = SpecReservingCpu(1000);
      if (soft) spec->preferred_constraints = {"node.labels.disk==ssd", "node.labels.az!=a"};
      if (random.Between(0, 1)) spec->preferences = {Spread("node.labels.az")};
      c.AddPending("t", "S", spec, random.Between(1, 120));
      pending.push_back(Pending(c.Schedule()));
    }
    EXPECT_EQ(pending[0], pending[1]) << "seed " << seed;
  }
}

TEST(Properties, AntiAffinityWithItselfNeverPutsTwoOnANode) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    TestCluster c;
    RandomCluster random(seed);
    random.Fill(c);
    auto spec = SpecReservingCpu(500);
    spec->affinities = {Without("S")};
    if (random.Between(0, 1)) spec->preferences = {Spread("node.labels.az")};
    if (random.Between(0, 1)) spec->preferences.push_back(Pack("node.id"));
    c.AddPending("t", "S", spec, random.Between(1, 60));
    for (const auto& [node, count] : c.CountsByNode(c.Schedule()))
      EXPECT_EQ(count, 1) << "seed " << seed << " node " << node;
  }
}

// Point 7 of issue 18: the same input (and seed) gives the same plan,
// whatever the preferences.
TEST(Properties, TheSameClusterGivesTheSamePlan) {
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::vector<std::map<std::string, std::string>> plans;
    for (int run = 0; run < 2; ++run) {
      TestCluster c;
      RandomCluster random(seed);
      random.Fill(c);
      auto spec = SpecReservingCpu(500);
      spec->preferences = {Spread("node.labels.az", {{"a", 2}, {"b", 1}}, 1),
                           Pack("node.labels.rack"), Pack("node.id")};
      spec->preferred_constraints = {"node.labels.disk==ssd"};
      spec->affinities = {Without("other", true), Without("S")};
      c.AddPending("t", "S", spec, random.Between(1, 60));
      SchedulerOptions options;
      options.tie_break_seed = seed;
      plans.push_back(c.Placements(c.Schedule(testing::At(1000), options)));
    }
    EXPECT_EQ(plans[0], plans[1]) << "seed " << seed;
  }
}

}  // namespace
}  // namespace berth::placement
