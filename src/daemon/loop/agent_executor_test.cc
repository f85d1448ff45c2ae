#include "daemon/loop/agent_executor.h"

#include <gtest/gtest.h>

#include <deque>

#include "executor/simulated_executor.h"

namespace berth::daemon {
namespace {

// An agent whose runs feed answers what the test queues (NotFound: an
// agent of simulated nodes). Runs waits for a queued answer up to its wait.
class FakeAgent final : public threephase::AgentTransport {
 public:
  FakeAgent(std::string id, bool fleet) : id_(std::move(id)), fleet_(fleet) {}
  const std::string& agent_id() const override { return id_; }
  Result<agent::SampleResponse> Sample(const agent::SampleRequest&, Duration) override {
    return agent::SampleResponse{};
  }
  Result<agent::CommitResponse> Commit(const agent::CommitRequest&, Duration) override {
    return agent::CommitResponse{};
  }
  Result<size_t> Release(const std::vector<std::string>&, Duration) override { return 0; }
  Result<std::vector<std::string>> Bindings(Duration) override {
    return std::vector<std::string>{};
  }
  Result<std::vector<std::string>> Eligible(const TaskSpec&, Duration) override {
    return std::vector<std::string>{};
  }
  uint32_t node_count() const override { return 0; }
  Result<agent::RunsBatch> Runs(const std::string& instance, int64_t sequence,
                                Duration wait) override {
    if (!fleet_) return Status::NotFound("simulated");
    std::unique_lock lock(mu_);
    asked_.push_back({instance, sequence});
    if (!queued_cv_.wait_for(lock, wait, [&] { return !queued_.empty(); }))
      return agent::RunsBatch{"i1", sequence, false, 2, {}};
    agent::RunsBatch batch = std::move(queued_.front());
    queued_.pop_front();
    return batch;
  }
  void Queue(agent::RunsBatch batch) {
    {
      std::lock_guard lock(mu_);
      queued_.push_back(std::move(batch));
    }
    queued_cv_.notify_all();
  }

 private:
  std::string id_;
  bool fleet_;
  std::mutex mu_;
  std::condition_variable queued_cv_;
  std::deque<agent::RunsBatch> queued_;
  std::vector<std::pair<std::string, int64_t>> asked_;
};

class AgentExecutorTest : public testing::Test {
 protected:
  AgentExecutorTest() : executor_(inner_, {&fleet_, &simulated_}, [this] { Woken(); }) {
    executor_.Start();
  }
  ~AgentExecutorTest() override { executor_.Stop(); }

  void Woken() {
    {
      std::lock_guard lock(mu_);
      ++wakes_;
    }
    woken_.notify_all();
  }
  // Waits (bounded) for the executor to name `run` in TakeChanged.
  bool Changed(const std::string& run) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      for (const std::string& id : executor_.TakeChanged())
        if (id == run) return true;
      std::unique_lock lock(mu_);
      const int seen = wakes_;
      if (!woken_.wait_until(lock, deadline, [&] { return wakes_ != seen; })) return false;
    }
  }
  executor::TaskToRun Task(std::string_view agent) const {
    return {id_, node_, no_run_, std::nullopt, &process_, agent};
  }

  FakeAgent fleet_{"a1", true}, simulated_{"a2", false};
  executor::SimulatedExecutor inner_;
  AgentExecutor executor_;
  std::mutex mu_;
  std::condition_variable woken_;
  int wakes_ = 0;
  const std::string id_ = "web.1", node_ = "n1";
  const std::optional<executor::SimulatedRun> no_run_;
  const executor::ProcessSpec process_ = [] {
    executor::ProcessSpec p;
    p.command = "sleep";
    return p;
  }();
  const Timestamp now_{};
};

TEST_F(AgentExecutorTest, ATaskOnAFleetStaysAssignedUntilItsAgentSaysItRunsAndEndsAsItSays) {
  EXPECT_EQ(executor_.Start(Task("a1"), now_), std::nullopt);
  fleet_.Queue({"i1", 1, true, 2, {{"web.1", "n1", TaskState::kRunning, "started (pid 7)", 0}}});
  ASSERT_TRUE(Changed("web.1"));
  EXPECT_EQ(executor_.Start(Task("a1"), now_),
            "running on node 'n1' of agent a1: started (pid 7)");
  std::optional<Timestamp> due;
  EXPECT_EQ(executor_.Check(Task("a1"), now_, &due), std::nullopt);
  fleet_.Queue({"i1", 2, false, 2, {{"web.1", "n1", TaskState::kFailed, "exit status 3", 900}}});
  ASSERT_TRUE(Changed("web.1"));
  std::optional<executor::Ended> ended = executor_.Check(Task("a1"), now_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_EQ(ended->message, "exit status 3");
  EXPECT_EQ(ended->ran_ms, 900);
  EXPECT_EQ(executor_.Check(Task("a1"), now_, &due), std::nullopt);  // taken once
}

TEST_F(AgentExecutorTest, AReportFromAnotherNodeDoesNotCount) {
  fleet_.Queue({"i1", 1, true, 2, {{"web.1", "n2", TaskState::kRunning, "", 0}}});
  ASSERT_TRUE(Changed("web.1"));
  EXPECT_EQ(executor_.Start(Task("a1"), now_), std::nullopt);
}

TEST_F(AgentExecutorTest, TasksOfAnAgentOfSimulatedNodesAndOfBerthdsOwnNodesGoToTheInnerExecutor) {
  // Until the agent's first answer its task waits; then the inner one runs it.
  if (!executor_.Start(Task("a2"), now_)) {
    ASSERT_TRUE(Changed("web.1"));
  }
  EXPECT_EQ(executor_.Start(Task("a2"), now_), inner_.Start(Task("a2"), now_));
  EXPECT_EQ(executor_.Start(Task(""), now_), inner_.Start(Task(""), now_));
}

}  // namespace
}  // namespace berth::daemon
