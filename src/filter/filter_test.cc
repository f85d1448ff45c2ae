// Tests of each filter, plus a contract test run once against every filter.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "filter/affinity_filter.h"
#include "filter/constraint_filter.h"
#include "filter/host_port_filter.h"
#include "filter/limits_filter.h"
#include "filter/max_replicas_filter.h"
#include "filter/platform_filter.h"
#include "filter/plugin_filter.h"
#include "filter/ready_filter.h"
#include "filter/resource_filter.h"

namespace berth::filter {
namespace {

NodeInfo MakeNodeInfo(std::function<void(Node&)> edit = {}) {
  Node n;
  n.id = "n1";
  if (edit) edit(n);
  return NodeInfo(std::move(n));
}

struct FilterCase {
  const char* name;
  std::function<std::unique_ptr<Filter>()> make;
  bool takes_part_for_empty_spec;
  const char* one_node;
  const char* three_nodes;
};

class FilterContract : public ::testing::TestWithParam<FilterCase> {};

TEST_P(FilterContract, TakesPartOnlyWhenTheTaskNeedsIt) {
  auto filter = GetParam().make();
  TaskSpec empty;
  EXPECT_EQ(filter->SetTask(empty, 0), GetParam().takes_part_for_empty_spec);
}

TEST_P(FilterContract, ExplainsWithSpecTexts) {
  auto filter = GetParam().make();
  EXPECT_EQ(filter->Explain(1), GetParam().one_node);
  EXPECT_EQ(filter->Explain(3), GetParam().three_nodes);
}

INSTANTIATE_TEST_SUITE_P(
    AllFilters, FilterContract,
    ::testing::Values(
        FilterCase{"ready", [] { return std::make_unique<ReadyFilter>(); }, true,
                   "1 node not available for new tasks", "3 nodes not available for new tasks"},
        FilterCase{"resources", [] { return std::make_unique<ResourceFilter>(); }, false,
                   "insufficient resources on 1 node", "insufficient resources on 3 nodes"},
        FilterCase{"plugins", [] { return std::make_unique<PluginFilter>(); }, false,
                   "missing plugin on 1 node", "missing plugin on 3 nodes"},
        FilterCase{"constraints", [] { return std::make_unique<ConstraintFilter>(); }, false,
                   "scheduling constraints not satisfied on 1 node",
                   "scheduling constraints not satisfied on 3 nodes"},
        FilterCase{"platform", [] { return std::make_unique<PlatformFilter>(); }, false,
                   "unsupported platform on 1 node", "unsupported platform on 3 nodes"},
        FilterCase{"limits", [] { return std::make_unique<LimitsFilter>(); }, false,
                   "limits not enforceable on 1 node", "limits not enforceable on 3 nodes"},
        FilterCase{"host_ports", [] { return std::make_unique<HostPortFilter>(); }, false,
                   "host-mode port already in use on 1 node",
                   "host-mode port already in use on 3 nodes"},
        FilterCase{"max_replicas", [] { return std::make_unique<MaxReplicasFilter>(); }, false,
                   "max replicas per node limit exceed", "max replicas per node limit exceed"},
        FilterCase{"affinity", [] { return std::make_unique<AffinityFilter>(); }, false,
                   "affinity not satisfied on 1 node", "affinity not satisfied on 3 nodes"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ReadyFilter, NeedsReadyAndActive) {
  ReadyFilter f;
  EXPECT_TRUE(f.Check(MakeNodeInfo()));
  for (NodeState s : {NodeState::kDown, NodeState::kUnknown, NodeState::kDisconnected})
    EXPECT_FALSE(f.Check(MakeNodeInfo([&](Node& n) { n.state = s; })));
  for (NodeAvailability a : {NodeAvailability::kPause, NodeAvailability::kDrain})
    EXPECT_FALSE(f.Check(MakeNodeInfo([&](Node& n) { n.availability = a; })));
}

// A task with limits goes where they hold, or where nobody says (a
// simulated node); a task without limits goes anywhere.
TEST(LimitsFilter, ATaskWithLimitsNeedsANodeThatEnforcesThem) {
  LimitsFilter f;
  TaskSpec spec;
  EXPECT_FALSE(f.SetTask(spec, 0));
  spec.has_limits = true;
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(MakeNodeInfo([](Node& n) { n.limits_enforced = true; })));
  EXPECT_FALSE(f.Check(MakeNodeInfo([](Node& n) { n.limits_enforced = false; })));
  EXPECT_TRUE(f.Check(MakeNodeInfo()));
}

// A pids limit needs the pids controller besides: a node that enforces cpu
// and memory but not pids takes the task only without its pids limit.
TEST(LimitsFilter, APidsLimitNeedsANodeThatEnforcesPidsToo) {
  LimitsFilter f;
  TaskSpec spec;
  spec.has_limits = true;
  const NodeInfo no_pids = MakeNodeInfo([](Node& n) {
    n.limits_enforced = true;
    n.pids_limit_enforced = false;
  });
  const NodeInfo pids = MakeNodeInfo([](Node& n) {
    n.limits_enforced = true;
    n.pids_limit_enforced = true;
  });
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(no_pids));
  spec.has_pids_limit = true;
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_FALSE(f.Check(no_pids));
  EXPECT_TRUE(f.Check(pids));
  EXPECT_FALSE(f.Check(MakeNodeInfo([](Node& n) {
    n.limits_enforced = false;
    n.pids_limit_enforced = true;
  })));
  // Unsaid, pids follow the node's other limits: a simulated node passes.
  EXPECT_TRUE(f.Check(MakeNodeInfo([](Node& n) { n.limits_enforced = true; })));
  EXPECT_TRUE(f.Check(MakeNodeInfo()));
}

TEST(ResourceFilter, EqualPassesMoreFails) {
  NodeInfo node = MakeNodeInfo([](Node& n) {
    n.resources.milli_cpu = 2000;
    n.resources.memory_bytes = 1 << 20;
  });
  ResourceFilter f;
  TaskSpec spec;
  spec.reservations.milli_cpu = 2000;
  spec.reservations.memory_bytes = 1 << 20;
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  spec.reservations.milli_cpu = 2001;
  EXPECT_FALSE(f.Check(node));
  spec.reservations.milli_cpu = 1;
  spec.reservations.memory_bytes = (1 << 20) + 1;
  EXPECT_FALSE(f.Check(node));
}

TEST(ResourceFilter, GenericDiscreteAndNamed) {
  NodeInfo node = MakeNodeInfo([](Node& n) {
    n.resources.generic = {{"apple", false, 4, {}}, {"gpu", true, 0, {"g1", "g2"}}};
  });
  ResourceFilter f;
  TaskSpec spec;
  spec.reservations.generic = {{"apple", 4}, {"gpu", 2}};
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  spec.reservations.generic = {{"apple", 5}};
  EXPECT_FALSE(f.Check(node));
  spec.reservations.generic = {{"gpu", 3}};
  EXPECT_FALSE(f.Check(node));
  spec.reservations.generic = {{"fpga", 1}};  // a kind the node lacks
  EXPECT_FALSE(f.Check(node));
}

TEST(PluginFilter, NamesTypesAndLatestTag) {
  NodeInfo node = MakeNodeInfo([](Node& n) {
    n.plugins = {{"Network", "overlay"}, {"volume", "rexray:latest"}, {"log", "syslog"}};
  });
  PluginFilter f;
  TaskSpec spec;
  spec.networks = {"overlay"};
  spec.volume_drivers = {"rexray"};
  spec.log_driver = "syslog";
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  spec.volume_drivers = {"rex"};  // prefix without ":latest" is not a match
  EXPECT_FALSE(f.Check(node));
  spec.volume_drivers = {};
  spec.networks = {"macvlan"};
  EXPECT_FALSE(f.Check(node));
  spec.networks = {};
  spec.log_driver = "fluentd";
  EXPECT_FALSE(f.Check(node));
  spec.log_driver = "none";  // asks for no plugin
  EXPECT_TRUE(f.Check(node));
}

TEST(PluginFilter, NodeWithoutLogPluginsSkipsTheLogCheck) {
  NodeInfo node = MakeNodeInfo([](Node& n) { n.plugins = {{"network", "overlay"}}; });
  PluginFilter f;
  TaskSpec spec;
  spec.log_driver = "fluentd";
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
}

TEST(ConstraintFilter, MatchesAllConstraints) {
  NodeInfo node = MakeNodeInfo([](Node& n) {
    n.labels["az"] = "a";
    n.role = NodeRole::kManager;
  });
  ConstraintFilter f;
  TaskSpec spec;
  spec.constraints = {"node.labels.az==a", "node.role==manager"};
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  TaskSpec other;
  other.constraints = {"node.labels.az==a", "node.role!=manager"};
  ASSERT_TRUE(f.SetTask(other, 0));
  EXPECT_FALSE(f.Check(node));
}

TEST(ConstraintFilter, UnparsableConstraintsDisableTheFilter) {
  ConstraintFilter f;
  TaskSpec spec;
  spec.constraints = {"node.labels.az"};
  EXPECT_FALSE(f.SetTask(spec, 0));
}

TEST(PlatformFilter, NormalisesArchitecturesOnBothSides) {
  EXPECT_EQ(NormaliseArch("x86_64"), "amd64");
  EXPECT_EQ(NormaliseArch("aarch64"), "arm64");
  EXPECT_EQ(NormaliseArch("ppc64le"), "ppc64le");
  PlatformFilter f;
  TaskSpec spec;
  spec.platforms = {{"linux", "amd64"}};
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(MakeNodeInfo([](Node& n) { n.platform = Platform{"linux", "x86_64"}; })));
  EXPECT_FALSE(f.Check(MakeNodeInfo([](Node& n) { n.platform = Platform{"windows", "amd64"}; })));
  EXPECT_FALSE(f.Check(MakeNodeInfo()));  // no platform reported
  spec.platforms = {{"", "aarch64"}};     // empty os matches any os
  EXPECT_TRUE(f.Check(MakeNodeInfo([](Node& n) { n.platform = Platform{"linux", "arm64"}; })));
  spec.platforms = {{"windows", ""}, {"linux", ""}};  // any listed platform may match
  EXPECT_TRUE(f.Check(MakeNodeInfo([](Node& n) { n.platform = Platform{"linux", "s390x"}; })));
}

TEST(HostPortFilter, OnlyHostModePublishedPortsByProtocol) {
  TaskSpec running;
  running.ports = {{Protocol::kTcp, 58, true}};
  NodeInfo node = MakeNodeInfo();
  std::vector<GenericClaim> claims;
  node.Reserve(running, &claims);
  HostPortFilter f;
  TaskSpec spec;
  spec.ports = {{Protocol::kTcp, 58, false}};  // ingress: takes no host port
  EXPECT_FALSE(f.SetTask(spec, 0));
  spec.ports = {{Protocol::kUdp, 58, true}};
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  spec.ports = {{Protocol::kUdp, 58, true}, {Protocol::kTcp, 58, true}};
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_FALSE(f.Check(node));
}

TEST(MaxReplicasFilter, CountsActiveTasksOfTheService) {
  NodeInfo node = MakeNodeInfo();
  node.AddActive(3);
  node.AddActive(3);
  node.AddActive(4);
  MaxReplicasFilter f;
  TaskSpec spec;
  spec.max_replicas_per_node = 2;
  ASSERT_TRUE(f.SetTask(spec, 3));
  EXPECT_FALSE(f.Check(node));
  ASSERT_TRUE(f.SetTask(spec, 4));
  EXPECT_TRUE(f.Check(node));
}

TEST(AffinityFilter, HardRulesOnlyWithResolvedServices) {
  NodeInfo node = MakeNodeInfo();
  node.AddActive(7);  // "db"
  const ServiceLookup lookup = [](std::string_view id) -> std::optional<ServiceIndex> {
    if (id == "db") return 7;
    if (id == "web") return 8;
    return std::nullopt;
  };
  AffinityFilter f;
  TaskSpec spec;
  spec.affinities = {{"db", false, true}};  // soft only: not a filter
  f.Resolve(spec, lookup);
  EXPECT_FALSE(f.SetTask(spec, 0));
  spec.affinities = {{"db", false, false}, {"web", true, false}};
  f.Resolve(spec, lookup);
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  node.AddActive(8);  // a "web" task arrives: the anti-affinity fails
  EXPECT_FALSE(f.Check(node));
  spec.affinities = {{"unknown", false, false}};
  f.Resolve(spec, lookup);
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_FALSE(f.Check(node));
  spec.affinities = {{"unknown", true, false}};  // held nowhere: anti passes
  f.Resolve(spec, lookup);
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_TRUE(f.Check(node));
  f.Resolve(spec, {});  // no lookup (berth-agent): nothing can be judged
  ASSERT_TRUE(f.SetTask(spec, 0));
  EXPECT_FALSE(f.Check(node));
}

}  // namespace
}  // namespace berth::filter
