#include "daemon/loop/counts.h"

#include <gtest/gtest.h>

namespace berth::daemon {
namespace {

std::shared_ptr<const TaskSpec> Reserving(int64_t milli_cpu, int64_t memory) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = milli_cpu;
  spec->reservations.memory_bytes = memory;
  spec->reservations.generic = {{"gpu", 1}};
  return spec;
}

CountedTask Running(std::string_view service, std::string_view node,
                    std::shared_ptr<const TaskSpec> spec, uint64_t version = 1) {
  return {service, "",   node,  "started", TaskState::kRunning, TaskState::kRunning,
          version, true, false, false,     std::move(spec)};
}

CountedTask Waiting(std::string_view service, std::string_view message) {
  return {service, "",    "",    message, TaskState::kPending, TaskState::kRunning, 1,
          true,    false, false, nullptr};
}

class LoopCountsTest : public ::testing::Test {
 protected:
  LoopCountsTest() {
    counts.PutNode("n1", std::make_shared<const Node>(), "");
    counts.PutService("web", {3, 1, {1, {}}});
  }
  std::shared_ptr<const CountsSnapshot> Publish() { return counts.Publish(7, ""); }
  LoopCounts counts;
};

TEST_F(LoopCountsTest, APlacedTaskAddsItsReservationsToItsNodeUntilItEnds) {
  CountedAs a, b;
  counts.Count(Running("web", "n1", Reserving(500, 1024)), a);
  counts.Count(Running("web", "n1", Reserving(250, 1024)), b);
  auto snapshot = Publish();
  const NodeRow* n1 = snapshot->FindNode("n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->tasks, 2u);
  EXPECT_EQ(n1->milli_cpu, 750);
  EXPECT_EQ(n1->memory_bytes, 2048);
  ASSERT_EQ(n1->generic.size(), 1u);
  EXPECT_EQ(n1->generic[0].count, 2);
  ASSERT_EQ(n1->owners.size(), 1u);
  EXPECT_EQ(n1->owners[0].id, "web");
  EXPECT_EQ(n1->owners[0].tasks, 2u);
  EXPECT_EQ(snapshot->FindService("web")->RunningCurrent(), 2u);

  CountedTask ended = Running("web", "n1", Reserving(500, 1024));
  ended.state = TaskState::kComplete;
  counts.Count(ended, a);
  snapshot = Publish();
  n1 = snapshot->FindNode("n1");
  EXPECT_EQ(n1->tasks, 1u);
  EXPECT_EQ(n1->milli_cpu, 250);
  EXPECT_EQ(snapshot->tasks_by_state[static_cast<size_t>(TaskState::kComplete)], 1u);
  EXPECT_EQ(snapshot->tasks_by_state[static_cast<size_t>(TaskState::kRunning)], 1u);
  counts.Uncount(a);
  counts.Uncount(b);
  snapshot = Publish();
  EXPECT_EQ(snapshot->FindNode("n1")->tasks, 0u);
  EXPECT_TRUE(snapshot->FindNode("n1")->owners.empty());
  EXPECT_TRUE(snapshot->FindNode("n1")->generic.empty());
  EXPECT_EQ(snapshot->FindService("web")->counted, 0u);
}

TEST_F(LoopCountsTest, ASnapshotDoesNotChangeWhenTheCountsMoveOn) {
  CountedAs a;
  counts.Count(Running("web", "n1", Reserving(500, 0)), a);
  const auto before = Publish();
  CountedAs b;
  counts.Count(Running("web", "n1", Reserving(500, 0)), b);
  counts.PutNode("n2", std::make_shared<const Node>(), "");
  const auto after = Publish();
  EXPECT_EQ(before->FindNode("n1")->tasks, 1u);
  EXPECT_EQ(before->FindNode("n2"), nullptr);
  EXPECT_EQ(after->FindNode("n1")->tasks, 2u);
  EXPECT_NE(after->FindNode("n2"), nullptr);
  EXPECT_EQ(Publish()->nodes, after->nodes) << "nothing changed: the chunks are shared";
}

TEST_F(LoopCountsTest, ARemovedServiceOrNodeLeavesTheViewsButItsTasksStillCount) {
  CountedAs a;
  counts.Count(Running("web", "n1", Reserving(500, 0)), a);
  counts.RemoveService("web");
  counts.RemoveNode("n1");
  auto snapshot = Publish();
  EXPECT_EQ(snapshot->FindService("web"), nullptr);
  EXPECT_EQ(snapshot->FindNode("n1"), nullptr);
  EXPECT_EQ(snapshot->tasks_by_state[static_cast<size_t>(TaskState::kRunning)], 1u);
  // Made again while the old task still counts: the counts carry on.
  counts.PutService("web", {1, 2, {2, {}}});
  counts.PutNode("n1", std::make_shared<const Node>(), "");
  snapshot = Publish();
  EXPECT_EQ(snapshot->FindNode("n1")->tasks, 1u);
  EXPECT_EQ(snapshot->FindService("web")->RunningCurrent(), 0u) << "version 1 < template 2";
  counts.Uncount(a);
  counts.RemoveService("web");
  counts.RemoveNode("n1");
  counts.PutNode("n3", std::make_shared<const Node>(), "");
  snapshot = Publish();
  size_t nodes = 0;
  snapshot->ForEachNode([&](const NodeRow&) { ++nodes; });
  EXPECT_EQ(nodes, 1u) << "n1 left once nothing counted there";
  EXPECT_EQ(snapshot->FindNode("n1"), nullptr);
}

TEST_F(LoopCountsTest, WaitingTasksCountByTheClassOfTheirReason) {
  CountedAs a, b, c, d;
  counts.Count(Waiting("web", "no suitable node (1 node not available for new tasks)"), a);
  counts.Count(Waiting("web", ""), b);
  CountedTask delayed = Waiting("web", "restarting");
  delayed.state = TaskState::kNew;
  delayed.has_restart_delay = true;
  counts.Count(delayed, c);
  CountedTask job{"",
                  "build",
                  "",
                  "waiting for admission",
                  TaskState::kNew,
                  TaskState::kRunning,
                  0,
                  true,
                  false,
                  true,
                  nullptr};
  counts.PutJob("build", "alice", 1, false);
  counts.Count(job, d);
  const auto snapshot = Publish();
  const auto& by = snapshot->pending_by_reason;
  EXPECT_EQ(by[static_cast<size_t>(PendingReason::kNoSuitableNode)], 1u);
  EXPECT_EQ(by[static_cast<size_t>(PendingReason::kScheduling)], 1u);
  EXPECT_EQ(by[static_cast<size_t>(PendingReason::kRestartDelay)], 1u);
  EXPECT_EQ(by[static_cast<size_t>(PendingReason::kAdmission)], 1u);
  EXPECT_EQ(snapshot->FindService("web")->pending_message, "restarting");
  bool found_job = false;
  snapshot->ForEachOwner([&](const OwnerRow& row) {
    if (!row.job) return;
    found_job = true;
    EXPECT_EQ(row.requestor, "alice");
    EXPECT_EQ(row.by_state[static_cast<size_t>(TaskState::kNew)], 1u);
  });
  EXPECT_TRUE(found_job);
}

TEST_F(LoopCountsTest, TheRunningCountFollowsTheTemplateVersion) {
  CountedAs old_task, new_task;
  counts.Count(Running("web", "n1", nullptr, 1), old_task);
  counts.Count(Running("web", "n1", nullptr, 2), new_task);
  counts.PutService("web", {3, 2, {2, {}}});
  EXPECT_EQ(Publish()->FindService("web")->RunningCurrent(), 1u);
  CountedTask stopping = Running("web", "n1", nullptr, 1);
  stopping.desired = TaskState::kShutdown;
  counts.Count(stopping, old_task);
  counts.PutService("web", {3, 3, {1, {}}});  // a rebalance: version 3 runs template 1
  EXPECT_EQ(Publish()->FindService("web")->RunningCurrent(), 1u) << "the stopping one is not";
}

}  // namespace
}  // namespace berth::daemon
