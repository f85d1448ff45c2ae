#include "daemon/nodes/node_executor.h"

#include <gtest/gtest.h>

#include <deque>

namespace berth::daemon {
namespace {

class NodeExecutorTest : public testing::Test {
 protected:
  NodeExecutorTest() { executor_.SetNode("n1", true); }

  executor::TaskToRun Task(const std::string& id, const std::string& node = "n1") {
    ids_.push_back(id);
    nodes_.push_back(node);
    return {ids_.back(), nodes_.back(), no_run_, std::nullopt, &process_};
  }
  AssignmentBatch Poll(const std::string& instance, int64_t since) {
    return executor_.Assignments("n1", instance, since, Duration{0});
  }

  int wakes_ = 0;
  NodeExecutor executor_{[this] { ++wakes_; }};
  const executor::ProcessSpec process_ = [] {
    executor::ProcessSpec p;
    p.command = "sleep";
    p.args = {"60"};
    return p;
  }();
  const std::optional<executor::SimulatedRun> no_run_;
  std::deque<std::string> ids_, nodes_;  // what the TaskToRuns refer to
  const Timestamp t0_{Duration{1'000'000}};
};

// Nothing goes to a node before the commit, and until the first commit a
// node's request answers nothing (not an empty full list).
TEST_F(NodeExecutorTest, AssignmentsArePublishedOnlyOnceCommitted) {
  EXPECT_FALSE(executor_.Start(Task("web.1.5"), t0_).has_value());  // assigned until n1 reports
  AssignmentBatch before = Poll("the-old-instance", 4);
  EXPECT_FALSE(before.full);
  EXPECT_TRUE(before.changes.empty());
  EXPECT_EQ(before.instance, "the-old-instance");  // so its next request still gets the full list
  EXPECT_EQ(before.revision, 4);
  executor_.Discarded();
  executor_.Committed(5);
  EXPECT_TRUE(Poll(executor_.instance(), 0).changes.empty());  // the failed pass's start is gone
  executor_.Start(Task("web.1.5"), t0_);
  executor_.Committed(6);
  AssignmentBatch batch = Poll(executor_.instance(), 5);
  ASSERT_EQ(batch.changes.size(), 1u);
  EXPECT_EQ(batch.changes[0].task, "web.1.5");
  EXPECT_TRUE(batch.changes[0].run);
  EXPECT_EQ(batch.changes[0].process->command, "sleep");
  EXPECT_EQ(batch.revision, 6);
  EXPECT_TRUE(Poll(executor_.instance(), 6).changes.empty());  // nothing after 6
}

// A node cut off since revision R gets exactly what changed after R; one
// from another berthd instance gets its whole list.
TEST_F(NodeExecutorTest, AReconnectingNodeGetsWhatChangedOrItsFullList) {
  executor_.Start(Task("a.1.1"), t0_);
  executor_.Start(Task("b.1.1"), t0_);
  executor_.Committed(3);
  executor_.Stop(Task("a.1.1"));
  executor_.Committed(4);
  AssignmentBatch changed = Poll(executor_.instance(), 3);
  ASSERT_EQ(changed.changes.size(), 1u);
  EXPECT_EQ(changed.changes[0].task, "a.1.1");
  EXPECT_FALSE(changed.changes[0].run);
  AssignmentBatch full = Poll("an-older-berthd", 4);
  EXPECT_TRUE(full.full);
  ASSERT_EQ(full.changes.size(), 1u);
  EXPECT_EQ(full.changes[0].task, "b.1.1");
}

// A pass that writes nothing commits at the store's revision, which a
// node may have seen already: its assignments still reach that node.
TEST_F(NodeExecutorTest, APassThatWroteNothingStillPublishesPastWhatANodeSaw) {
  executor_.Start(Task("a.1.1"), t0_);
  executor_.Committed(9);
  ASSERT_EQ(Poll(executor_.instance(), 0).revision, 9);
  executor_.Start(Task("b.1.1"), t0_);
  executor_.Committed(9);  // nothing written: the store is still at 9
  AssignmentBatch batch = Poll(executor_.instance(), 9);
  ASSERT_EQ(batch.changes.size(), 1u);
  EXPECT_EQ(batch.changes[0].task, "b.1.1");
  EXPECT_EQ(batch.revision, 10);
}

TEST_F(NodeExecutorTest, ATaskRunsAndEndsAsItsNodeReports) {
  executor_.Start(Task("web.1.5"), t0_);
  executor_.Committed(6);
  ASSERT_TRUE(executor_.Report("n1", {{"web.1.5", TaskState::kRunning, "pid 42", 0}}).empty());
  EXPECT_EQ(wakes_, 1);
  EXPECT_EQ(executor_.TakeChanged(), std::vector<std::string>{"web.1.5"});
  EXPECT_EQ(executor_.Start(Task("web.1.5"), t0_), "running on node 'n1': pid 42");
  std::optional<Timestamp> due;
  EXPECT_FALSE(executor_.Check(Task("web.1.5"), t0_, &due).has_value());
  ASSERT_TRUE(
      executor_.Report("n1", {{"web.1.5", TaskState::kFailed, "exit status 3", 1500}}).empty());
  std::optional<executor::Ended> ended = executor_.Check(Task("web.1.5"), t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_FALSE(ended->rejected);
  EXPECT_EQ(ended->message, "exit status 3");
  EXPECT_EQ(ended->ran_ms, 1500);
  EXPECT_FALSE(due.has_value());
  // A pass whose commit failed takes the report again in the next one.
  executor_.Discarded();
  EXPECT_TRUE(executor_.Check(Task("web.1.5"), t0_, &due).has_value());
  // Ended, it leaves the list of what n1 runs: a full list does not name it.
  executor_.Committed(7);
  EXPECT_TRUE(Poll("a-restarted-node", 0).changes.empty());
}

// A task that ended before berthd saw it run: Start says it ran, and names
// it for the next pass, whose Check says how it ended.
TEST_F(NodeExecutorTest, ATaskRejectedBeforeItRanEndsInTheNextPass) {
  executor_.Start(Task("web.1.5"), t0_);
  executor_.Committed(6);
  ASSERT_TRUE(
      executor_.Report("n1", {{"web.1.5", TaskState::kRejected, "cannot run 'x'", 0}}).empty());
  executor_.TakeChanged();
  EXPECT_TRUE(executor_.Start(Task("web.1.5"), t0_).has_value());
  EXPECT_EQ(executor_.TakeChanged(), std::vector<std::string>{"web.1.5"});
  std::optional<Timestamp> due;
  std::optional<executor::Ended> ended = executor_.Check(Task("web.1.5"), t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->rejected);
}

// A removed service's task is stopped without its template: the node is
// told to stop what it was told to run.
TEST_F(NodeExecutorTest, ATaskOfARemovedServiceIsStoppedOnItsNode) {
  executor_.Start(Task("web.1.5"), t0_);
  executor_.Committed(6);
  executor::TaskToRun gone = Task("web.1.5");
  gone.process = nullptr;
  executor_.Stop(gone);
  executor_.Committed(7);
  AssignmentBatch batch = Poll(executor_.instance(), 6);
  ASSERT_EQ(batch.changes.size(), 1u);
  EXPECT_FALSE(batch.changes[0].run);
  EXPECT_EQ(batch.changes[0].process->command, "sleep");
  // Its node's word that it stopped is not kept: berthd is done with it.
  ASSERT_TRUE(executor_.Report("n1", {{"web.1.5", TaskState::kShutdown, "stopped", 0}}).empty());
  EXPECT_TRUE(executor_.TakeChanged().empty());
}

TEST_F(NodeExecutorTest, ANodeCannotReportAnotherNodesTask) {
  executor_.SetNode("n2", true);
  executor_.Start(Task("web.1.5", "n2"), t0_);
  executor_.Committed(6);
  executor_.Start(Task("own.1.5"), t0_);
  executor_.Committed(7);
  const std::vector<std::string> refused = executor_.Report(
      "n1", {{"web.1.5", TaskState::kComplete, "", 0}, {"own.1.5", TaskState::kRunning, "", 0}});
  EXPECT_EQ(refused, std::vector<std::string>{"web.1.5"});
  EXPECT_EQ(executor_.TakeChanged(), std::vector<std::string>{"own.1.5"});  // its own is kept
}

// Beyond max_waiting requests held open, a node is answered at once and
// told when to ask again; a change to one node wakes only that node.
TEST_F(NodeExecutorTest, ABusyBerthdAnswersAtOnceAndSaysWhenToAskAgain) {
  NodeExecutor busy([] {}, NodeExecutorOptions{0, Duration{5000}});
  busy.SetNode("n1", true);
  busy.Start(Task("web.1.5"), t0_);
  busy.Committed(6);
  AssignmentBatch batch = busy.Assignments("n1", busy.instance(), 6, std::chrono::hours(1));
  EXPECT_TRUE(batch.changes.empty());
  EXPECT_EQ(batch.poll_after, Duration{5000});
  // With news, the answer carries it and asks for no pause.
  EXPECT_EQ(busy.Assignments("n1", busy.instance(), 5, std::chrono::hours(1)).poll_after,
            Duration{0});
}

// Simulated nodes, and tasks without a command, stay simulated.
TEST_F(NodeExecutorTest, OtherTasksRunOnTheSimulatedExecutor) {
  EXPECT_EQ(executor_.Start(Task("web.1.5", "sim1"), t0_), "started by the simulated executor");
  executor::TaskToRun no_command = Task("job.1");
  no_command.process = nullptr;
  EXPECT_EQ(executor_.Start(no_command, t0_), "started by the simulated executor");
  executor_.Committed(6);
  EXPECT_TRUE(Poll(executor_.instance(), 0).changes.empty());
}

// berthd's first pass after a restart checks every running task: the feed
// holds them again before any node is answered.
TEST_F(NodeExecutorTest, ACheckedRunningTaskIsPublishedAgain) {
  std::optional<Timestamp> due;
  EXPECT_FALSE(executor_.Check(Task("web.1.5"), t0_, &due).has_value());
  executor_.Committed(9);
  AssignmentBatch full = Poll("the-old-instance", 7);
  EXPECT_TRUE(full.full);
  ASSERT_EQ(full.changes.size(), 1u);
  EXPECT_EQ(full.changes[0].task, "web.1.5");
}

}  // namespace
}  // namespace berth::daemon
