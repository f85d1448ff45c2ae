#include "core/node_info.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

Node GpuNode() {
  Node n;
  n.id = "n";
  n.resources.milli_cpu = 4000;
  n.resources.generic = {{"gpu", true, 0, {"c", "a", "b"}}, {"apple", false, 5, {}}};
  return n;
}

TEST(NodeInfo, ReserveAndReleaseAreExactInverses) {
  NodeInfo info(GpuNode());
  TaskSpec spec;
  spec.reservations.milli_cpu = 1500;
  spec.reservations.generic = {{"gpu", 2}, {"apple", 3}};
  spec.ports = {{Protocol::kTcp, 80, true}};
  std::vector<GenericClaim> claims;
  info.Reserve(spec, &claims);
  EXPECT_EQ(claims, (std::vector<GenericClaim>{{"gpu", "a"}, {"gpu", "b"}}));
  EXPECT_EQ(info.available_milli_cpu(), 2500);
  EXPECT_TRUE(info.HasGeneric("gpu", 1));
  EXPECT_FALSE(info.HasGeneric("gpu", 2));
  EXPECT_TRUE(info.HasGeneric("apple", 2));
  EXPECT_FALSE(info.HasGeneric("apple", 3));
  info.Release(spec, claims);
  EXPECT_EQ(info.available_generic(), NodeInfo(GpuNode()).available_generic());
  EXPECT_EQ(info.available_milli_cpu(), 4000);
  EXPECT_FALSE(info.PortInUse(PortSpec{Protocol::kTcp, 80, true}.Key()));
}

TEST(NodeInfo, AllNamesTakenMeansTheKindIsMissing) {
  NodeInfo info(GpuNode());
  TaskSpec spec;
  spec.reservations.generic = {{"gpu", 3}};
  std::vector<GenericClaim> claims;
  info.Reserve(spec, &claims);
  EXPECT_FALSE(info.HasGeneric("gpu", 0));
  EXPECT_FALSE(info.HasGeneric("fpga", 0));
}

TEST(NodeInfo, APortUsedTwiceStaysUsedUntilBothRelease) {
  NodeInfo info(GpuNode());
  TaskSpec spec;
  spec.ports = {{Protocol::kUdp, 53, true}};
  std::vector<GenericClaim> none;
  info.Reserve(spec, &none);
  info.Reserve(spec, &none);
  info.Release(spec, none);
  EXPECT_TRUE(info.PortInUse(spec.ports[0].Key()));
  info.Release(spec, none);
  EXPECT_FALSE(info.PortInUse(spec.ports[0].Key()));
}

TEST(NodeInfo, UpdateNodeKeepsWhatTasksHold) {
  NodeInfo info(GpuNode());
  TaskSpec spec;
  spec.reservations.milli_cpu = 1000;
  spec.reservations.generic = {{"gpu", 1}, {"apple", 2}};
  std::vector<GenericClaim> claims;
  info.Reserve(spec, &claims);
  info.AddActive(1);
  Node bigger = GpuNode();
  bigger.resources.milli_cpu = 8000;
  bigger.labels["az"] = "a";
  info.UpdateNode(bigger);
  EXPECT_EQ(info.available_milli_cpu(), 7000);
  EXPECT_TRUE(info.HasGeneric("apple", 3));
  EXPECT_FALSE(info.HasGeneric("apple", 4));
  EXPECT_TRUE(info.HasGeneric("gpu", 2));
  EXPECT_FALSE(info.HasGeneric("gpu", 3));
  EXPECT_EQ(info.active_tasks(), 1u);
  EXPECT_EQ(info.node().labels.at("az"), "a");
}

TEST(NodeInfo, ActiveCountsPerService) {
  NodeInfo info(GpuNode());
  info.AddActive(2);
  info.AddActive(1);
  info.AddActive(2);
  EXPECT_EQ(info.ActiveTasksOf(2), 2u);
  EXPECT_EQ(info.ActiveTasksOf(1), 1u);
  EXPECT_EQ(info.ActiveTasksOf(7), 0u);
  info.RemoveActive(2);
  info.RemoveActive(7);  // not present: no change
  EXPECT_EQ(info.active_tasks(), 2u);
  EXPECT_EQ(info.ActiveTasksOf(2), 1u);
}

}  // namespace
}  // namespace berth
