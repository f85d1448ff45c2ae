// The worked examples of docs/placement.md ("Worked examples") and the
// engine's rules, end to end
// through Scheduler::SchedulePending.
#include "placement/scheduler.h"

#include <gtest/gtest.h>

#include <random>

#include "placement/test_cluster.h"

namespace berth::placement {
namespace {

using testing::At;
using testing::MakeNode;
using testing::MakeSpec;
using testing::NodeWithCpu;
using testing::SpecReservingCpu;
using testing::TestCluster;

// Seed 000's table: N1 (S1=1, S2=1, ubuntu), N2 (S1=1, ubuntu), N3 (S2=1, centos).
void AddSeedTable(TestCluster& c) {
  for (auto [id, os] : {std::pair{"N1", "ubuntu"}, {"N2", "ubuntu"}, {"N3", "centos"}}) {
    Node n = MakeNode(id);
    n.engine_labels["os"] = os;
    c.Add(n);
  }
  auto spec = MakeSpec();
  c.AddTask("s1-a", "S1", spec, TaskState::kRunning, "N1");
  c.AddTask("s2-a", "S2", spec, TaskState::kRunning, "N1");
  c.AddTask("s1-b", "S1", spec, TaskState::kRunning, "N2");
  c.AddTask("s2-b", "S2", spec, TaskState::kRunning, "N3");
}

TEST(WorkedExamples, SeedTableWithoutPreferencesPicksN2) {
  TestCluster c;
  AddSeedTable(c);
  c.AddTask("new", "S2", MakeSpec());
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["new"], "N2");
  EXPECT_EQ(c.MessageOf(r, "new"), "scheduler assigned task to node");
}

TEST(WorkedExamples, SeedTableSpreadOverOsPicksFirstBranchInByteOrder) {
  TestCluster c;
  AddSeedTable(c);
  auto spec = MakeSpec();
  spec->preferences = {PlacementPreference::Spread("engine.labels.os")};
  c.AddTask("new", "S2", spec);
  auto r = c.Schedule();
  // Both branches hold one S2 task; "centos" < "ubuntu", so N3.
  EXPECT_EQ(c.Placements(r)["new"], "N3");
}

TEST(WorkedExamples, EighteenTasksOnFiveNodesThenASecondService) {
  TestCluster c;
  for (int i = 1; i <= 5; ++i) c.Add(MakeNode("n" + std::to_string(i)));
  c.AddPending("a", "A", MakeSpec(), 18);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r),
            (std::map<std::string, int>{{"n1", 4}, {"n2", 4}, {"n3", 4}, {"n4", 3}, {"n5", 3}}));
  c.AddPending("b", "B", MakeSpec(), 2);
  auto r2 = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r2), (std::map<std::string, int>{{"n4", 1}, {"n5", 1}}));
}

TEST(WorkedExamples, SpreadOverAzGivesTheLoneNodeHalf) {
  TestCluster c;
  for (int i = 1; i <= 5; ++i) {
    Node n = MakeNode("id" + std::to_string(i));
    n.labels["az"] = i == 1 ? "az1" : "az2";
    c.Add(n);
  }
  auto spec = MakeSpec();
  spec->preferences = {PlacementPreference::Spread("node.labels.az")};
  c.AddPending("t", "S", spec, 8);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{
                                   {"id1", 4}, {"id2", 1}, {"id3", 1}, {"id4", 1}, {"id5", 1}}));
}

TEST(WorkedExamples, UnavailableNodesAndInsufficientMemory) {
  TestCluster c;
  Node ready = MakeNode("a");
  ready.resources.memory_bytes = 1'000'000'000;
  c.Add(ready);
  c.Add(MakeNode("b", NodeState::kUnknown));
  c.Add(MakeNode("c", NodeState::kUnknown));
  auto spec = MakeSpec();
  spec->reservations.memory_bytes = 2'000'000'000;
  c.AddTask("t", "S", spec);
  auto r = c.Schedule();
  EXPECT_EQ(c.MessageOf(r, "t"),
            "no suitable node (2 nodes not available for new tasks; insufficient resources on 1 "
            "node)");
}

TEST(WorkedExamples, DiscreteGenericResourcesFreeOnShutdown) {
  TestCluster c;
  Node n = MakeNode("n");
  n.resources.memory_bytes = 1'000'000'000;
  n.resources.generic = {{"apple", false, 4, {}}};
  c.Add(n);
  auto spec = MakeSpec();
  spec->reservations.memory_bytes = 800'000'000;
  spec->reservations.generic = {{"apple", 3}};
  TaskIndex first = c.AddTask("first", "S", spec);
  c.AddTask("second", "S", spec);
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["first"], "n");
  EXPECT_EQ(c.MessageOf(r, "second"), "no suitable node (insufficient resources on 1 node)");
  ASSERT_TRUE(c.state.SetTaskState(first, TaskState::kShutdown, At(1001)).ok());
  auto r2 = c.Schedule();
  EXPECT_EQ(c.Placements(r2)["second"], "n");
}

TEST(WorkedExamples, HostPortsByProtocol) {
  TestCluster c;
  c.Add(MakeNode("n1"));
  c.Add(MakeNode("n2"));
  auto tcp = MakeSpec(), udp = MakeSpec(), both = MakeSpec();
  tcp->ports = {{Protocol::kTcp, 58, true}};
  udp->ports = {{Protocol::kUdp, 58, true}};
  both->ports = {{Protocol::kTcp, 58, true}, {Protocol::kUdp, 58, true}};
  // One tcp and one udp task on each node: the pairs differ, so they share.
  c.AddTask("tcp1", "T", tcp, TaskState::kRunning, "n1");
  c.AddTask("tcp2", "T", tcp, TaskState::kRunning, "n2");
  c.AddTask("udp", "U", udp);
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["udp"], "n1");
  c.AddTask("udp2", "U", udp);
  auto r2 = c.Schedule();
  EXPECT_EQ(c.Placements(r2)["udp2"], "n2");
  c.AddTask("both", "B", both);
  auto r3 = c.Schedule();
  EXPECT_EQ(c.MessageOf(r3, "both"), "no suitable node (host-mode port already in use on 2 nodes)");
}

TEST(Engine, NoNodesGivesBareMessage) {
  TestCluster c;
  c.AddTask("t", "S", MakeSpec());
  auto r = c.Schedule();
  EXPECT_EQ(c.MessageOf(r, "t"), "no suitable node");
}

TEST(Engine, PortsOfOneBatchDoNotCollide) {
  TestCluster c;
  c.Add(MakeNode("n1"));
  c.Add(MakeNode("n2"));
  auto spec = MakeSpec();
  spec->ports = {{Protocol::kTcp, 80, true}};
  c.AddPending("t", "S", spec, 3);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n1", 1}, {"n2", 1}}));
  EXPECT_EQ(c.MessageOf(r, "t2"), "no suitable node (host-mode port already in use on 2 nodes)");
}

TEST(Engine, MaxReplicasCountsTasksPlacedInTheSameBatch) {
  TestCluster c;
  c.Add(MakeNode("n1"));
  c.Add(MakeNode("n2"));
  auto spec = MakeSpec();
  spec->max_replicas_per_node = 2;
  c.AddPending("t", "S", spec, 5);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"n1", 2}, {"n2", 2}}));
  EXPECT_EQ(c.MessageOf(r, "t4"), "no suitable node (max replicas per node limit exceed)");
}

TEST(Engine, NamedGenericResourcesAreClaimedByName) {
  TestCluster c;
  Node n = MakeNode("n");
  n.resources.generic = {{"gpu", true, 0, {"GPU-b", "GPU-a", "GPU-c"}}};
  c.Add(n);
  auto spec = MakeSpec();
  spec->reservations.generic = {{"gpu", 2}};
  TaskIndex a = c.AddTask("a", "S", spec);
  c.AddTask("b", "S", spec);
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["a"], "n");
  EXPECT_EQ(c.state.task(a).claims,
            (std::vector<GenericClaim>{{"gpu", "GPU-a"}, {"gpu", "GPU-b"}}));
  EXPECT_EQ(c.MessageOf(r, "b"), "no suitable node (insufficient resources on 1 node)");
  ASSERT_TRUE(c.state.SetTaskState(a, TaskState::kComplete, At(1001)).ok());
  auto r2 = c.Schedule();
  EXPECT_EQ(c.Placements(r2)["b"], "n");
}

TEST(Engine, PreassignedTasksAreConfirmedOrExplained) {
  TestCluster c;
  c.Add(MakeNode("up"));
  c.Add(MakeNode("down", NodeState::kDown));
  auto spec = MakeSpec();
  c.AddTask("g.up", "G", spec, TaskState::kPending, "up");
  c.AddTask("g.down", "G", spec, TaskState::kPending, "down");
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["g.up"], "up");
  EXPECT_EQ(c.MessageOf(r, "g.up"), "scheduler confirmed task can run on preassigned node");
  EXPECT_EQ(c.Placements(r)["g.down"], "");
  // Bare explanation: no "no suitable node" prefix.
  EXPECT_EQ(c.MessageOf(r, "g.down"), "1 node not available for new tasks");
}

TEST(Engine, DesiredShutdownTasksHoldResourcesButDoNotSpread) {
  TestCluster c;
  Node n1 = MakeNode("n1"), n2 = MakeNode("n2");
  n1.resources.milli_cpu = n2.resources.milli_cpu = 1000;
  c.Add(n1);
  c.Add(n2);
  auto spec = MakeSpec();
  spec->reservations.milli_cpu = 600;
  Task stopping;
  stopping.id = "stopping";
  stopping.service_id = "S";
  stopping.spec = spec;
  stopping.state = TaskState::kRunning;
  stopping.desired_state = TaskState::kShutdown;
  stopping.node_id = "n1";
  ASSERT_TRUE(c.state.AddTask(stopping).ok());
  EXPECT_EQ(c.state.node(0).active_tasks(), 0u);
  EXPECT_EQ(c.state.node(0).available_milli_cpu(), 400);
  c.AddPending("t", "S", spec, 2);
  auto r = c.Schedule();
  EXPECT_EQ(c.Placements(r)["t0"], "n2");
  // n1's failure was counted before n2 passed, which reset the counts; only
  // n2 filling up afterwards is in the explanation (spec: counts reset on pass).
  EXPECT_EQ(c.MessageOf(r, "t1"), "no suitable node (insufficient resources on 1 node)");
}

// Five failures of one service version within five minutes make a node sort
// last for that version only, until the failures age out.
TEST(FaultyNodes, FiveRecentFailuresSortANodeLast) {
  auto run = [](int failures, int64_t now_s, uint64_t version) {
    TestCluster c;
    c.Add(MakeNode("a"));
    c.Add(MakeNode("b"));
    auto spec = MakeSpec();
    c.AddTask("busy", "S", spec, TaskState::kRunning, "b", version);
    for (int i = 0; i < failures; ++i)
      c.AddTask("f" + std::to_string(i), "S", spec, TaskState::kFailed, "a", 1, At(100 + i));
    c.AddTask("t", "S", spec, TaskState::kPending, "", version);
    auto r = c.Schedule(At(now_s));
    return c.Placements(r)["t"];
  };
  EXPECT_EQ(run(4, 200, 1), "a");        // below the threshold: fewer tasks wins
  EXPECT_EQ(run(5, 200, 1), "b");        // faulty for version 1
  EXPECT_EQ(run(5, 100 + 300, 1), "b");  // oldest failure exactly 5 minutes old still counts
  EXPECT_EQ(run(5, 100 + 301, 1), "a");  // it aged out: 4 recent failures left
  EXPECT_EQ(run(5, 200, 2), "a");        // a new spec version starts clean
}

TEST(FaultyNodes, FailuresRecordedByStateChangesOverTime) {
  TestCluster c;
  c.Add(MakeNode("a"));
  c.Add(MakeNode("b"));
  auto spec = MakeSpec();
  c.AddTask("busy", "S", spec, TaskState::kRunning, "b");
  for (int i = 0; i < 5; ++i) {
    TaskIndex t = c.AddTask("r" + std::to_string(i), "S", spec, TaskState::kRunning, "a");
    ASSERT_TRUE(c.state.SetTaskState(t, TaskState::kFailed, At(1000 + i)).ok());
  }
  c.AddTask("next", "S", spec);
  EXPECT_EQ(c.Placements(c.Schedule(At(1010)))["next"], "b");
  c.AddTask("later", "S", spec);
  // b now runs 2, a runs 0 but is still faulty.
  EXPECT_EQ(c.Placements(c.Schedule(At(1200)))["later"], "b");
  c.AddTask("much-later", "S", spec);
  EXPECT_EQ(c.Placements(c.Schedule(At(1000 + 305)))["much-later"], "a");
}

TEST(FaultyNodes, PreassignedFailuresAreNotRecorded) {
  TestCluster c;
  c.Add(MakeNode("a"));
  auto spec = MakeSpec();
  for (int i = 0; i < 5; ++i) {
    Task t;
    t.id = "g" + std::to_string(i);
    t.service_id = "G";
    t.spec = spec;
    t.spec_version = 1;
    t.state = TaskState::kFailed;
    t.node_id = "a";
    t.updated_at = At(100);
    ASSERT_TRUE(c.state.AddTask(t, /*preassigned=*/true).ok());
  }
  EXPECT_EQ(c.state.RecentFailures(0, c.state.InternService("G"), 1, At(0)), 0u);
}

TEST(Engine, SameInputSamePlan) {
  auto build = [](TestCluster& c) {
    for (int i = 0; i < 30; ++i) {
      Node n = MakeNode("node-" + std::to_string(i * 7 % 30));
      n.labels["az"] = "az" + std::to_string(i % 3);
      n.labels["rack"] = "r" + std::to_string(i % 4);
      c.Add(n);
    }
    auto spec = MakeSpec();
    spec->preferences = {PlacementPreference::Spread("node.labels.az"),
                         PlacementPreference::Spread("node.labels.rack")};
    c.AddPending("t", "S", spec, 100);
  };
  TestCluster a, b;
  build(a);
  build(b);
  EXPECT_EQ(a.Placements(a.Schedule()), b.Placements(b.Schedule()));
}

TEST(Engine, TieBreakSeedChangesOnlyTies) {
  TestCluster c;
  for (int i = 0; i < 20; ++i) c.Add(MakeNode("n" + std::to_string(i)));
  c.AddPending("t", "S", MakeSpec(), 20);
  SchedulerOptions seeded;
  seeded.tie_break_seed = 42;
  auto r = c.Schedule(At(1000), seeded);
  // Every node still gets exactly one task: the seed reorders ties only.
  auto counts = c.CountsByNode(r);
  EXPECT_EQ(counts.size(), 20u);
  for (auto& [node, n] : counts) EXPECT_EQ(n, 1) << node;
}

TEST(Engine, SpreadWithFullBranchesStops) {
  // Every branch fills up: the loop must end with the rest pending.
  TestCluster c;
  for (int i = 0; i < 4; ++i) {
    Node n = MakeNode("n" + std::to_string(i));
    n.labels["az"] = i < 2 ? "x" : "y";
    n.resources.milli_cpu = 1000;
    c.Add(n);
  }
  auto spec = MakeSpec();
  spec->preferences = {PlacementPreference::Spread("node.labels.az")};
  spec->reservations.milli_cpu = 500;
  c.AddPending("t", "S", spec, 10);
  auto r = c.Schedule();
  int placed = 0;
  for (auto& [node, n] : c.CountsByNode(r)) placed += n;
  EXPECT_EQ(placed, 8);
  EXPECT_EQ(c.MessageOf(r, "t9"), "no suitable node (insufficient resources on 2 nodes)");
}

// Branch "a" holds room for one task, "d" already runs 6. After "a" fills,
// the second round must count what it placed in "b" and "c" this pass:
// 6/6/6 (SwarmKit's stale totals would give b=7, c=5).
TEST(Engine, BranchTotalsCountThisLoopsPlacements) {
  TestCluster c;
  for (const char* az : {"a", "b", "c", "d"}) {
    Node n = MakeNode(std::string("node-") + az);
    n.labels["az"] = az;
    n.resources.milli_cpu = std::string(az) == "a" ? 100 : 10'000;
    c.Add(n);
  }
  auto spec = MakeSpec();
  spec->preferences = {PlacementPreference::Spread("node.labels.az")};
  spec->reservations.milli_cpu = 100;
  for (int i = 0; i < 6; ++i)
    c.AddTask("old" + std::to_string(i), "S", spec, TaskState::kRunning, "node-d");
  c.AddPending("t", "S", spec, 13);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r),
            (std::map<std::string, int>{{"node-a", 1}, {"node-b", 6}, {"node-c", 6}}));
}

TEST(Engine, MissingLabelIsItsOwnBranch) {
  TestCluster c;
  Node a = MakeNode("a"), b = MakeNode("b"), d = MakeNode("d");
  a.labels["az"] = "x";
  b.labels["az"] = "x";
  c.Add(a);
  c.Add(b);
  c.Add(d);  // no az label: branch ""
  auto spec = MakeSpec();
  spec->preferences = {PlacementPreference::Spread("node.labels.az")};
  c.AddPending("t", "S", spec, 4);
  auto r = c.Schedule();
  EXPECT_EQ(c.CountsByNode(r), (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"d", 2}}));
}

// Property: the one-off fast path makes exactly the decisions of the per-task
// tree scan, on random clusters with resources, ports, failures and down nodes.
TEST(FastPaths, OneOffRunsMakeTheDecisionsOfThePerTaskScan) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    auto build = [&](TestCluster& c, std::mt19937 g) {
      int nodes = 1 + static_cast<int>(g() % 12);
      for (int i = 0; i < nodes; ++i) {
        Node n = MakeNode("n" + std::to_string(g() % 1000) + "-" + std::to_string(i),
                          g() % 6 == 0 ? NodeState::kDown : NodeState::kReady);
        n.resources.milli_cpu = 1000 * static_cast<int64_t>(1 + g() % 4);
        n.resources.memory_bytes = 1 << 30;
        c.Add(n);
      }
      auto spec = MakeSpec();
      spec->reservations.milli_cpu = 250 * static_cast<int64_t>(1 + g() % 4);
      if (g() % 3 == 0) spec->ports = {{Protocol::kTcp, 80, true}};
      if (g() % 3 == 0) spec->max_replicas_per_node = 1 + g() % 3;
      for (int i = 0; i < static_cast<int>(g() % 8); ++i)
        c.AddTask("old" + std::to_string(i), "", spec, TaskState::kRunning,
                  c.state.node(g() % nodes).node().id, std::nullopt);
      int tasks = static_cast<int>(g() % 40);
      c.AddPending("t", "", spec, tasks, std::nullopt);
    };
    uint32_t seed = rng();
    TestCluster fast, slow;
    build(fast, std::mt19937(seed));
    build(slow, std::mt19937(seed));
    SchedulerOptions reference;
    reference.fast_paths = false;
    auto rf = fast.Schedule(At(1000));
    auto rs = slow.Schedule(At(1000), reference);
    ASSERT_EQ(rf.decisions.size(), rs.decisions.size());
    for (size_t i = 0; i < rf.decisions.size(); ++i) {
      EXPECT_EQ(rf.decisions[i].task, rs.decisions[i].task) << "round " << round;
      EXPECT_EQ(rf.decisions[i].node, rs.decisions[i].node) << "round " << round << " #" << i;
      EXPECT_EQ(rf.MessageOf(rf.decisions[i]), rs.MessageOf(rs.decisions[i])) << "round " << round;
    }
  }
}

// Property: one-task groups placed from the pass's heap of nodes by load get
// the node the tree scan would give them, in passes that mix them with other
// groups (several replicas, spread preferences, services already running,
// failures), tight resources, ports and down nodes.
TEST(FastPaths, OneTaskGroupsMakeTheDecisionsOfTheScan) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    auto build = [&](TestCluster& c, std::mt19937 g) {
      const int nodes = 1 + static_cast<int>(g() % 40);
      for (int i = 0; i < nodes; ++i) {
        Node n = MakeNode("n" + std::to_string(g() % 1000) + "-" + std::to_string(i),
                          g() % 8 == 0 ? NodeState::kDown : NodeState::kReady);
        n.resources.milli_cpu = 1000 * static_cast<int64_t>(1 + g() % 3);
        n.resources.memory_bytes = 1 << 30;
        n.labels["az"] = "az" + std::to_string(g() % 3);
        c.Add(n);
      }
      const int services = 1 + static_cast<int>(g() % 60);
      for (int s = 0; s < services; ++s) {
        auto spec = MakeSpec();
        const std::string service = "s" + std::to_string(s);
        spec->reservations.milli_cpu = 250 * static_cast<int64_t>(g() % 5);
        if (g() % 4 == 0) spec->ports = {{Protocol::kTcp, 80, true}};
        if (g() % 6 == 0) spec->preferences = {PlacementPreference::Spread("node.labels.az")};
        auto node_id = [&] { return c.state.node(g() % nodes).node().id; };
        if (g() % 5 == 0)
          c.AddTask(service + ".old", service, spec, TaskState::kRunning, node_id());
        if (g() % 5 == 0)
          c.AddTask(service + ".failed", service, spec, TaskState::kFailed, node_id(), 1, At(900));
        c.AddPending(service + ".", service, spec, g() % 4 == 0 ? 2 : 1);
      }
    };
    const uint32_t seed = rng();
    TestCluster fast, slow;
    build(fast, std::mt19937(seed));
    build(slow, std::mt19937(seed));
    SchedulerOptions options, reference;
    options.max_failures = reference.max_failures = 1;
    reference.fast_paths = false;
    const PassResult rf = fast.Schedule(At(1000), options);
    const PassResult rs = slow.Schedule(At(1000), reference);
    EXPECT_EQ(fast.Placements(rf), slow.Placements(rs)) << "round " << round;
    ASSERT_EQ(rf.decisions.size(), rs.decisions.size());
    for (size_t i = 0; i < rf.decisions.size(); ++i)
      EXPECT_EQ(rf.MessageOf(rf.decisions[i]), rs.MessageOf(rs.decisions[i])) << "round " << round;
  }
}

// A group no node could take is not searched again until some node's
// capacity may have changed: its tasks keep their verdict (unchanged). A
// task released anywhere, or a node added, makes the next pass look again.
TEST(UnchangedCapacity, AGroupNoNodeTookIsSkippedUntilCapacityMayHaveChanged) {
  TestCluster c;
  c.Add(NodeWithCpu("n1", 1000));
  c.AddPending("big", "B", SpecReservingCpu(2000), 3);
  PassResult first = c.Schedule();
  EXPECT_EQ(first.decisions.size(), 3u);
  EXPECT_EQ(first.group_durations.size(), 1u);  // the group was searched, and timed
  EXPECT_EQ(c.MessageOf(first, "big0"), "no suitable node (insufficient resources on 1 node)");
  PassResult again = c.Schedule();
  EXPECT_TRUE(again.decisions.empty());
  EXPECT_EQ(again.unchanged, 3u);
  EXPECT_TRUE(again.group_durations.empty());  // skipped groups are not
  // A task of another service is placed (it takes capacity, after the group
  // was skipped), then ends and gives it back: the group is looked at again.
  const TaskIndex other = c.AddTask("other", "O", SpecReservingCpu(100));
  PassResult with_other = c.Schedule();
  EXPECT_EQ(c.Placements(with_other), (std::map<std::string, std::string>{{"other", "n1"}}));
  EXPECT_EQ(with_other.group_durations.size(), 1u);  // the other service's group
  EXPECT_EQ(with_other.unchanged, 3u);
  EXPECT_EQ(c.Schedule().decisions.size(), 3u);  // n1 took a task since
  EXPECT_EQ(c.Schedule().unchanged, 3u);
  ASSERT_TRUE(c.state.SetTaskState(other, TaskState::kComplete, At(2000)).ok());
  EXPECT_EQ(c.Schedule().decisions.size(), 3u);
  EXPECT_EQ(c.Schedule().unchanged, 3u);
  c.Add(NodeWithCpu("n2", 4000));
  EXPECT_EQ(c.Placements(c.Schedule())["big0"], "n2");
}

}  // namespace
}  // namespace berth::placement
