// The agent plugins: a contract test run against every implementation, then
// each plugin's own rules.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "agent/battery_level.h"
#include "agent/geo_location.h"
#include "agent/least_recently_used.h"
#include "agent/placement_filters.h"
#include "agent/resources_fit.h"
#include "agent/scarcity_penalty.h"

namespace berth::agent {
namespace {

AgentNode MakeNode(int64_t cpu, int64_t memory, Labels labels = {}) {
  Node n;
  n.id = "n";
  n.resources = {cpu, memory, {}};
  n.labels = std::move(labels);
  std::vector<Node> one = {n};
  NodesCache cache(one);
  return cache.Read(0, [](const AgentNode& a) { return a; });
}

PlacementTask MakeTask(int64_t cpu = 0, int64_t memory = 0) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = cpu;
  spec->reservations.memory_bytes = memory;
  return {"t", 0, spec, {}, {}, {}};
}

ManualClock kClock{Timestamp{Duration{1'000'000}}};

struct PluginCase {
  const char* name;
  std::function<std::unique_ptr<NodePlugin>()> make;
};

class PluginContract : public ::testing::TestWithParam<PluginCase> {};

TEST_P(PluginContract, ScoresStayWithin0To100AndAreStable) {
  auto plugin = GetParam().make();
  EXPECT_FALSE(plugin->name().empty());
  const PlacementTask task = MakeTask(500, 1 << 20);
  plugin->SetTask(task);
  for (const AgentNode& node :
       {MakeNode(1000, 1 << 30), MakeNode(4000, 1LL << 33, {{"geo-location", "1,1"}}),
        MakeNode(0, 0, {{"battery-level", "40"}})}) {
    const bool passes = plugin->Filter(node);
    EXPECT_EQ(passes, plugin->Filter(node));  // no hidden state between calls
    if (!plugin->HasScore()) continue;
    const int64_t score = plugin->Score(node);
    EXPECT_GE(score, 0);
    EXPECT_LE(score, 100);
    EXPECT_EQ(score, plugin->Score(node));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Every, PluginContract,
    ::testing::Values(
        PluginCase{"ResourcesFitLeast", [] { return std::make_unique<ResourcesFit>(); }},
        PluginCase{"ResourcesFitMost",
                   [] { return std::make_unique<ResourcesFit>(ResourceScoring::kMostAllocated); }},
        PluginCase{"PlacementFilters", [] { return std::make_unique<PlacementFilters>(); }},
        PluginCase{"GeoLocation", [] { return std::make_unique<GeoLocation>(); }},
        PluginCase{"BatteryLevel", [] { return std::make_unique<BatteryLevel>(); }},
        PluginCase{"LeastRecentlyUsed", [] { return std::make_unique<LeastRecentlyUsed>(kClock); }},
        PluginCase{"ScarcityPenalty", [] { return std::make_unique<ScarcityPenalty>(); }}),
    [](const ::testing::TestParamInfo<PluginCase>& info) { return std::string(info.param.name); });

TEST(ResourcesFit, LeastAndMostAllocatedScores) {
  // cpu: total 1000, 200 used, demand 300 -> 50%; memory: total 1000, 0 used,
  // demand 100 -> 10%; mean 30%: least 70, most 30.
  EXPECT_EQ(AllocationScore(ResourceScoring::kLeastAllocated, 1000, 800, 300, 1000, 1000, 100), 70);
  EXPECT_EQ(AllocationScore(ResourceScoring::kMostAllocated, 1000, 800, 300, 1000, 1000, 100), 30);
  // floor, exactly: mean 1/3 -> most 33, least 100 - 33 = 67.
  EXPECT_EQ(AllocationScore(ResourceScoring::kMostAllocated, 3, 3, 1, 3, 3, 1), 33);
  EXPECT_EQ(AllocationScore(ResourceScoring::kLeastAllocated, 3, 3, 1, 3, 3, 1), 67);
  // A resource of total 0 is skipped in the mean.
  EXPECT_EQ(AllocationScore(ResourceScoring::kMostAllocated, 0, 0, 0, 100, 50, 0), 50);
  EXPECT_EQ(AllocationScore(ResourceScoring::kLeastAllocated, 0, 0, 0, 0, 0, 0), 100);
  // Byte-sized totals do not overflow.
  EXPECT_EQ(AllocationScore(ResourceScoring::kMostAllocated, 1LL << 40, 0, 0, 1LL << 50, 0, 0),
            100);
}

TEST(ResourcesFit, NegativeFreeAmountsNeverPass) {
  std::vector<Node> one(1);
  one[0].id = "n";
  one[0].resources = {1000, 1000, {}};
  NodesCache cache(one);
  auto big = std::make_shared<TaskSpec>();
  big->reservations.milli_cpu = 1500;  // drives free cpu to -500
  Reservation r = cache.Reserve(0, big);
  ResourcesFit fit;
  const PlacementTask nothing = MakeTask(0, 0);  // even a task that asks for nothing
  fit.SetTask(nothing);
  EXPECT_FALSE(cache.Read(0, [&](const AgentNode& n) { return fit.Filter(n); }));
  cache.Rollback(r);
  EXPECT_TRUE(cache.Read(0, [&](const AgentNode& n) { return fit.Filter(n); }));
}

TEST(ScarcityPenalty, EdgeNodesAreScoredDownOnlyForTasksThatDoNotNeedThem) {
  const AgentNode cloud = MakeNode(4000, 1LL << 33);
  const AgentNode geo = MakeNode(1000, 1LL << 31, {{"geo-location", "52.52,13.405"}});
  const AgentNode battery = MakeNode(1000, 1LL << 31, {{"battery-level", "80"}});
  EXPECT_FALSE(cloud.scarce);
  EXPECT_TRUE(geo.scarce);
  EXPECT_TRUE(battery.scarce);
  ScarcityPenalty penalty;
  PlacementTask plain = MakeTask(500, 1 << 20);
  penalty.SetTask(plain);
  EXPECT_TRUE(penalty.Filter(geo));  // a score, never a filter
  EXPECT_EQ(penalty.Score(cloud), 100);
  EXPECT_EQ(penalty.Score(geo), 0);
  EXPECT_EQ(penalty.Score(battery), 0);
  // Any edge requirement or hard constraint: no node is scored down.
  PlacementTask edge = plain;
  edge.edge.target = GeoPoint{52'520'000, 13'405'000};
  PlacementTask battery_task = plain;
  battery_task.edge.min_battery_percent = 30;
  PlacementTask constrained = MakeTask(500, 1 << 20);
  std::const_pointer_cast<TaskSpec>(constrained.spec)->constraints = {"node.labels.zone==a"};
  for (const PlacementTask* task : {&edge, &battery_task, &constrained}) {
    EXPECT_TRUE(NeedsScarceNodes(*task));
    penalty.SetTask(*task);
    EXPECT_EQ(penalty.Score(cloud), 100);
    EXPECT_EQ(penalty.Score(geo), 100);
  }
  EXPECT_FALSE(NeedsScarceNodes(plain));
}

TEST(GeoLocation, DistanceFilterAndScore) {
  GeoLocation geo;
  PlacementTask task = MakeTask();
  task.edge.target = GeoPoint{52'520'000, 13'405'000};  // Berlin
  task.edge.max_distance_m = 10'000;
  geo.SetTask(task);
  const AgentNode at_target = MakeNode(1, 1, {{"geo-location", "52.52,13.405"}});
  const AgentNode five_km = MakeNode(1, 1, {{"geo-location", "52.565,13.405"}});  // ~5.0 km north
  const AgentNode far = MakeNode(1, 1, {{"geo-location", "48.137,11.575"}});      // Munich
  const AgentNode unlabelled = MakeNode(1, 1);
  EXPECT_TRUE(geo.Filter(at_target));
  EXPECT_EQ(geo.Score(at_target), 100);
  EXPECT_TRUE(geo.Filter(five_km));
  const double d = DistanceMeters(*five_km.geo, *task.edge.target);
  EXPECT_NEAR(d, 5004, 5);
  EXPECT_EQ(geo.Score(five_km), static_cast<int64_t>(std::ceil(100 - 99 * d / 10'000)));
  EXPECT_FALSE(geo.Filter(far));
  EXPECT_FALSE(geo.Filter(unlabelled));
  // Without a target every node passes with 100.
  const PlacementTask anywhere = MakeTask();
  geo.SetTask(anywhere);
  EXPECT_TRUE(geo.Filter(far));
  EXPECT_EQ(geo.Score(unlabelled), 100);
  EXPECT_FALSE(ParseGeoLocation("91,0").has_value());
  EXPECT_FALSE(ParseGeoLocation("1;2").has_value());
}

TEST(BatteryLevel, MainsPoweredPassesBatteriesNeedTheMinimums) {
  BatteryLevel battery;
  PlacementTask task = MakeTask();
  task.edge.min_battery_percent = 30;
  task.edge.min_capacity_mah = 2000;
  battery.SetTask(task);
  EXPECT_TRUE(battery.Filter(MakeNode(1, 1)));
  EXPECT_EQ(battery.Score(MakeNode(1, 1)), 100);
  EXPECT_TRUE(
      battery.Filter(MakeNode(1, 1, {{"battery-level", "30"}, {"battery-capacity", "2000"}})));
  EXPECT_FALSE(
      battery.Filter(MakeNode(1, 1, {{"battery-level", "29"}, {"battery-capacity", "5000"}})));
  EXPECT_FALSE(
      battery.Filter(MakeNode(1, 1, {{"battery-level", "90"}, {"battery-capacity", "1999"}})));
  EXPECT_EQ(battery.Score(MakeNode(1, 1, {{"battery-level", "64"}})), 64);
}

TEST(LeastRecentlyUsed, LongestAgoScoresHighest) {
  ManualClock clock(Timestamp{Duration{100'000}});
  LeastRecentlyUsed lru(clock);
  const PlacementTask task = MakeTask();
  lru.SetTask(task);
  AgentNode never = MakeNode(1, 1), recent = MakeNode(1, 1), older = MakeNode(1, 1);
  recent.bound_tasks = older.bound_tasks = 1;
  recent.last_bound = Timestamp{Duration{95'000}};  // 5 s ago
  older.last_bound = Timestamp{Duration{40'000}};   // 60 s ago
  EXPECT_EQ(lru.Score(never), 100);
  EXPECT_EQ(lru.Score(recent), 5);
  EXPECT_EQ(lru.Score(older), 60);
}

}  // namespace
}  // namespace berth::agent
