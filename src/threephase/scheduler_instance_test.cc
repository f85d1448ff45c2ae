// SchedulerInstance against scripted agents: sampling arithmetic, MultiBind,
// requeueing and failing after the last attempt.
#include "threephase/scheduler_instance.h"

#include <gtest/gtest.h>

#include <functional>
#include <mutex>

namespace berth::threephase {
namespace {

// An agent whose answers a test scripts.
class ScriptedAgent final : public AgentTransport {
 public:
  explicit ScriptedAgent(std::string id) : id_(std::move(id)) {}
  const std::string& agent_id() const override { return id_; }
  Result<agent::SampleResponse> Sample(const agent::SampleRequest& r, Duration) override {
    std::lock_guard lock(mu_);
    ++samples;
    return sample ? sample(r) : Result<agent::SampleResponse>(agent::SampleResponse{});
  }
  std::vector<Result<agent::SampleResponse>> SampleMany(
      const std::vector<agent::SampleRequest>& requests, Duration timeout) override {
    {
      std::lock_guard lock(mu_);
      batch_sizes.push_back(requests.size());
    }
    return AgentTransport::SampleMany(requests, timeout);
  }
  Result<agent::CommitResponse> Commit(const agent::CommitRequest& r, Duration) override {
    std::lock_guard lock(mu_);
    commits.push_back(r.node_id);
    return commit(r);
  }
  Result<size_t> Release(const std::vector<std::string>&, Duration) override { return 0; }
  Result<std::vector<std::string>> Bindings(Duration) override {
    return std::vector<std::string>{};
  }
  Result<std::vector<std::string>> Eligible(const TaskSpec&, Duration) override {
    return std::vector<std::string>{};
  }
  uint32_t node_count() const override { return 0; }
  // A sample of `nodes` (id, agent score) on this agent.
  agent::SampleResponse Nodes(std::vector<std::pair<std::string, int64_t>> nodes) const {
    agent::SampleResponse response;
    for (auto& [node, score] : nodes) {
      agent::NodeSample s;
      s.agent_id = id_;
      s.node_id = node;
      s.score_sum = score;
      s.weight_sum = 1;
      s.free_milli_cpu = s.total_milli_cpu = 1000;
      response.nodes.push_back(s);
    }
    return response;
  }

  std::function<Result<agent::SampleResponse>(const agent::SampleRequest&)> sample;
  std::function<Result<agent::CommitResponse>(const agent::CommitRequest&)> commit =
      [](const agent::CommitRequest&) {
        return agent::CommitResponse{agent::CommitOutcome::kBound, ""};
      };
  int samples = 0;
  std::vector<size_t> batch_sizes;  // of each SampleMany call
  std::vector<std::string> commits;

 private:
  std::mutex mu_;
  std::string id_;
};

agent::PlacementTask Task(std::string id) {
  return {std::move(id), 0, std::make_shared<TaskSpec>(), {}, {}, {}};
}

// Runs one task through a single-threaded instance and returns its outcome;
// `conflicted_commits`, if given, receives that counter.
TaskOutcome RunOne(std::vector<AgentTransport*> agents, SchedulerOptions options = {},
                   uint64_t* conflicted_commits = nullptr) {
  options.samplers = options.decision_pipelines = 1;
  TaskOutcome outcome;
  std::mutex mu;
  SchedulerInstance instance(std::move(agents), options, [&](const TaskOutcome& o) {
    std::lock_guard lock(mu);
    outcome = o;
  });
  instance.Start();
  instance.Submit(Task("t"));
  EXPECT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  instance.Stop();
  if (conflicted_commits != nullptr)
    *conflicted_commits = instance.counters().conflicted_commits.load();
  return outcome;
}

TEST(AgentsPerAttempt, CeilingOfCpWithAMinimumOfOne) {
  EXPECT_EQ(SchedulerInstance::AgentsPerAttempt(50, 10), 5u);
  EXPECT_EQ(SchedulerInstance::AgentsPerAttempt(50, 3), 2u);  // ceil(1.5)
  EXPECT_EQ(SchedulerInstance::AgentsPerAttempt(10, 3), 1u);  // ceil(0.3)
  EXPECT_EQ(SchedulerInstance::AgentsPerAttempt(0, 8), 1u);   // at least one
  EXPECT_EQ(SchedulerInstance::AgentsPerAttempt(100, 8), 8u);
  EXPECT_EQ(SchedulerInstance::AgentsPerAttempt(250, 8), 8u);  // never more than all
}

TEST(MultiBind, SecondCandidateWinsWhenTheFirstConflicts) {
  ScriptedAgent a("a");
  a.sample = [&](const agent::SampleRequest&) {
    return a.Nodes({{"best", 90}, {"next", 80}, {"last", 10}});
  };
  a.commit = [](const agent::CommitRequest& r) {
    return agent::CommitResponse{
        r.node_id == "best" ? agent::CommitOutcome::kConflict : agent::CommitOutcome::kBound, ""};
  };
  uint64_t conflicted_commits = 99;
  TaskOutcome o = RunOne({&a}, {}, &conflicted_commits);
  EXPECT_TRUE(o.bound);
  EXPECT_EQ(o.node_id, "next");
  EXPECT_EQ(o.conflicts, 1);
  EXPECT_EQ(conflicted_commits, 0u);  // one candidate conflicted, not the commit
  EXPECT_EQ(o.attempts, 1);
  EXPECT_EQ(a.commits, (std::vector<std::string>{"best", "next"}));  // best first
}

TEST(MultiBind, OnlyTheMBestAreTried) {
  ScriptedAgent a("a");
  a.sample = [&](const agent::SampleRequest&) {
    return a.Nodes({{"n1", 10}, {"n2", 50}, {"n3", 30}, {"n4", 40}, {"n5", 20}});
  };
  a.commit = [](const agent::CommitRequest&) {
    return agent::CommitResponse{agent::CommitOutcome::kConflict, "full"};
  };
  SchedulerOptions options;
  options.max_attempts = 1;
  TaskOutcome o = RunOne({&a}, options);
  EXPECT_FALSE(o.bound);
  EXPECT_EQ(a.commits, (std::vector<std::string>{"n2", "n4", "n3"}));
  EXPECT_EQ(o.reason, "failed after 1 attempts: all 3 candidates conflicted");
}

TEST(MultiBind, TotalConflictRequeuesTheTask) {
  ScriptedAgent a("a");
  int round = 0;
  a.sample = [&](const agent::SampleRequest&) {
    ++round;
    return a.Nodes({{"n" + std::to_string(round), 50}});
  };
  a.commit = [](const agent::CommitRequest& r) {
    return agent::CommitResponse{
        r.node_id == "n1" ? agent::CommitOutcome::kConflict : agent::CommitOutcome::kBound, ""};
  };
  uint64_t conflicted_commits = 0;
  TaskOutcome o = RunOne({&a}, {}, &conflicted_commits);
  EXPECT_TRUE(o.bound);
  EXPECT_EQ(o.node_id, "n2");
  EXPECT_EQ(o.attempts, 2);
  EXPECT_EQ(conflicted_commits, 1u);
}

TEST(Attempts, FailedAfterTenWithTheLastReason) {
  ScriptedAgent a("a");  // always answers with no nodes
  TaskOutcome o = RunOne({&a});
  EXPECT_FALSE(o.bound);
  EXPECT_EQ(o.attempts, 10);
  EXPECT_EQ(o.reason, "failed after 10 attempts: no agent returned an eligible node");
  EXPECT_EQ(a.samples, 10);
}

// Widening: Cp 25% of four agents asks one, and only one agent has room.
// Whatever the draw, the attempt after an empty one asks all four, so the
// task binds by its second attempt, and a task with one attempt asks all.
TEST(Attempts, AnAttemptAfterAnEmptyOneAsksEveryAgent) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    ScriptedAgent e1("e1"), e2("e2"), e3("e3"), room("room");
    room.sample = [&](const agent::SampleRequest&) {
      return Result<agent::SampleResponse>(room.Nodes({{"n", 100}}));
    };
    SchedulerOptions options;
    options.cluster_percent = 25;
    options.seed = seed;
    TaskOutcome o = RunOne({&e1, &e2, &e3, &room}, options);
    EXPECT_TRUE(o.bound) << o.reason;
    EXPECT_LE(o.attempts, 2) << "seed " << seed;
    options.max_attempts = 1;
    ScriptedAgent f1("f1"), f2("f2"), f3("f3"), room2("room2");
    room2.sample = [&](const agent::SampleRequest&) {
      return Result<agent::SampleResponse>(room2.Nodes({{"n", 100}}));
    };
    o = RunOne({&f1, &f2, &f3, &room2}, options);
    EXPECT_TRUE(o.bound) << "seed " << seed << ": " << o.reason;
  }
}

TEST(Attempts, AnAgentErrorCountsAsNoNodes) {
  ScriptedAgent broken("broken"), good("good");
  broken.sample = [](const agent::SampleRequest&) {
    return Result<agent::SampleResponse>(Status::Unavailable("timed out"));
  };
  good.sample = [&](const agent::SampleRequest&) { return good.Nodes({{"g", 50}}); };
  SchedulerOptions options;
  options.cluster_percent = 100;  // ask both every time
  std::vector<AgentTransport*> agents = {&broken, &good};
  options.samplers = options.decision_pipelines = 1;
  SchedulerInstance instance(agents, options);
  instance.Start();
  instance.Submit(Task("t"));
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  instance.Stop();
  EXPECT_EQ(instance.counters().bound.load(), 1u);
  EXPECT_EQ(instance.counters().sample_errors.load(), 1u);
}

TEST(Attempts, NothingPassingTheDecisionFiltersIsItsOwnReason) {
  ScriptedAgent a("a");
  a.sample = [&](const agent::SampleRequest&) { return a.Nodes({{"n", 50}}); };
  SchedulerOptions options;
  options.max_attempts = 2;
  options.samplers = options.decision_pipelines = 1;
  TaskOutcome outcome;
  SchedulerInstance instance({&a}, options, [&](const TaskOutcome& o) { outcome = o; });
  instance.Start();
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = 5000;  // more than the sampled free 1000
  instance.Submit({"big", 0, spec, {}, {}, {}});
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  instance.Stop();
  EXPECT_EQ(outcome.reason, "failed after 2 attempts: no sampled node passed the decision filters");
}

TEST(AgentHealth, AFailingAgentIsSkippedAfterThreeFailuresInARow) {
  ScriptedAgent dead("dead"), live("live");
  dead.sample = [](const agent::SampleRequest&) {
    return Result<agent::SampleResponse>(Status::Unavailable("connection refused"));
  };
  live.sample = [&](const agent::SampleRequest&) { return live.Nodes({{"l", 50}}); };
  SchedulerOptions options;
  options.cluster_percent = 50;                 // one agent per attempt
  options.health = {3, std::chrono::hours(1)};  // not asked again during the test
  options.samplers = 2;
  SchedulerInstance instance({&dead, &live}, options);
  instance.Start();
  for (int i = 0; i < 200; ++i) instance.Submit(Task("t" + std::to_string(i)));
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  instance.Stop();
  EXPECT_EQ(instance.counters().bound.load(), 200u);
  // Each sampler may have asked it once more while the third failure
  // landed; a call fails once, however many tasks it carried.
  EXPECT_GE(dead.batch_sizes.size(), 3u);
  EXPECT_LE(dead.batch_sizes.size(), 3u + options.samplers);
  EXPECT_FALSE(instance.health().Available(0, 0));
}

TEST(Pinned, OnlyThePinnedAgentIsAskedAboutThePinnedNode) {
  ScriptedAgent a("a"), b("b");
  std::string asked_about;
  b.sample = [&](const agent::SampleRequest& r) {
    asked_about = r.node_id;
    return b.Nodes({{r.node_id, 50}});
  };
  agent::PlacementTask task = Task("svc.b-n7");
  task.pinned_agent = "b";
  task.pinned_node = "b-n7";
  SchedulerOptions options;
  options.cluster_percent = 100;
  options.samplers = options.decision_pipelines = 1;
  TaskOutcome outcome;
  SchedulerInstance instance({&a, &b}, options, [&](const TaskOutcome& o) { outcome = o; });
  instance.Start();
  instance.Submit(task);
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  instance.Stop();
  EXPECT_TRUE(outcome.bound);
  EXPECT_EQ(outcome.node_id, "b-n7");
  EXPECT_EQ(asked_about, "b-n7");
  EXPECT_EQ(a.samples, 0);
}

TEST(Pinned, AnUnfitNodeFailsTheTaskAtOnceWithTheAgentsReason) {
  ScriptedAgent a("a");
  a.sample = [](const agent::SampleRequest& r) {
    agent::SampleResponse none;
    none.reason = "node '" + r.node_id + "': 1 node not available for new tasks";
    return Result<agent::SampleResponse>(none);
  };
  agent::PlacementTask task = Task("svc.n1");
  task.pinned_agent = "a";
  task.pinned_node = "n1";
  SchedulerOptions options;
  options.samplers = options.decision_pipelines = 1;
  TaskOutcome outcome;
  SchedulerInstance instance({&a}, options, [&](const TaskOutcome& o) { outcome = o; });
  instance.Start();
  instance.Submit(task);
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  instance.Stop();
  EXPECT_FALSE(outcome.bound);
  EXPECT_EQ(outcome.attempts, 1);
  EXPECT_EQ(outcome.reason,
            "failed after 1 attempts: node 'n1': 1 node not available for new tasks");
}

}  // namespace
}  // namespace berth::threephase

namespace berth::threephase {
namespace {

// Tasks queued before the samplers start are sampled sample_batch at a
// time: the agent is asked once per batch, and every task is bound.
TEST(SchedulerInstance, QueuedTasksAreSampledInBatchesOfOneRequestPerAgent) {
  ScriptedAgent agent("a");
  agent.sample = [&](const agent::SampleRequest&) { return agent.Nodes({{"n1", 10}}); };
  SchedulerOptions options;
  options.samplers = options.decision_pipelines = 1;
  options.sample_batch = 4;
  std::mutex mu;
  int bound = 0;
  SchedulerInstance instance({&agent}, options, [&](const TaskOutcome& o) {
    std::lock_guard lock(mu);
    bound += o.bound ? 1 : 0;
  });
  for (int i = 0; i < 10; ++i) instance.Submit(Task("t" + std::to_string(i)));
  instance.Start();
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(10)));
  EXPECT_EQ(bound, 10);
  EXPECT_EQ(agent.batch_sizes, (std::vector<size_t>{4, 4, 2}));
  EXPECT_EQ(agent.samples, 10);
}

}  // namespace
}  // namespace berth::threephase
