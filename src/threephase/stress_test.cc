// Optimistic concurrency end to end: 4 scheduler instances share 8 real
// agents whose clusters are nearly full. Whatever the interleaving, no node
// may be over-committed, every task gets exactly one outcome, and the agents'
// bindings agree with the instances' counts. Also run under the thread
// sanitizer (the tsan preset).
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>

#include "agent/agent.h"
#include "threephase/scheduler_instance.h"

namespace berth::threephase {
namespace {

TEST(Stress, FourInstancesEightAgentsNeverOvercommit) {
  constexpr int kAgents = 8, kNodesPerAgent = 20, kInstances = 4;
  constexpr int64_t kNodeCpu = 1000, kTaskCpu = 100;  // 10 tasks per node
  constexpr int kCapacity = kAgents * kNodesPerAgent * 10;
  constexpr int kTasks = kCapacity + 200;  // more than fits: some must fail
  std::vector<std::unique_ptr<agent::Agent>> agents;
  std::vector<std::unique_ptr<InProcessTransport>> transports;
  std::vector<AgentTransport*> views;
  for (int a = 0; a < kAgents; ++a) {
    std::vector<Node> nodes;
    for (int n = 0; n < kNodesPerAgent; ++n) {
      Node node;
      node.id = "a" + std::to_string(a) + "-n" + std::to_string(n);
      node.resources = {kNodeCpu, 1LL << 30, {}};
      nodes.push_back(node);
    }
    agent::AgentOptions options;
    options.id = "agent-" + std::to_string(a);
    options.seed = static_cast<uint64_t>(a + 1);
    options.sampling_pipelines = 2;
    options.binding_pipelines = 2;
    agents.push_back(std::make_unique<agent::Agent>(options, std::move(nodes)));
    transports.push_back(std::make_unique<InProcessTransport>(*agents.back()));
    views.push_back(transports.back().get());
  }
  std::mutex mu;
  std::map<std::string, int> outcomes;  // task id -> outcomes seen
  int bound = 0;
  auto record = [&](const TaskOutcome& o) {
    std::lock_guard lock(mu);
    ++outcomes[o.task_id];
    bound += o.bound;
  };
  std::vector<std::unique_ptr<SchedulerInstance>> instances;
  for (int i = 0; i < kInstances; ++i) {
    SchedulerOptions options;
    options.seed = static_cast<uint64_t>(100 + i);
    options.cluster_percent = 50;
    options.node_basis_points = 2000;  // 4 of 20 nodes per agent
    options.decision_pipelines = 2;    // deciders of one instance race too
    instances.push_back(std::make_unique<SchedulerInstance>(views, options, record));
    instances.back()->Start();
  }
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = kTaskCpu;
  for (int t = 0; t < kTasks; ++t)
    instances[static_cast<size_t>(t % kInstances)]->Submit(
        {"t" + std::to_string(t), 0, spec, {}, {}, {}});
  for (auto& instance : instances) ASSERT_TRUE(instance->WaitIdle(std::chrono::seconds(120)));
  for (auto& instance : instances) instance->Stop();

  ASSERT_EQ(outcomes.size(), static_cast<size_t>(kTasks));
  for (const auto& [id, count] : outcomes) EXPECT_EQ(count, 1) << id;
  uint64_t agent_bound = 0;
  for (const auto& a : agents) {
    agent_bound += a->counters().bound.load();
    for (uint32_t n = 0; n < a->nodes().size(); ++n) {
      EXPECT_FALSE(a->nodes().Overcommitted(n)) << a->nodes().NodeId(n);
      a->nodes().Read(n, [&](const agent::AgentNode& node) {
        EXPECT_GE(node.info.available_milli_cpu(), 0);  // no reservation left behind
        EXPECT_EQ(node.info.available_milli_cpu(), kNodeCpu - kTaskCpu * node.bound_tasks);
      });
    }
    EXPECT_EQ(a->locker().size(), 0u);
  }
  EXPECT_EQ(agent_bound, static_cast<uint64_t>(bound));
  EXPECT_LE(bound, kCapacity);
  // Sampling only 2% of the way into nearly-full clusters, most of the
  // capacity must still be found.
  EXPECT_GE(bound, kCapacity * 9 / 10);
}

}  // namespace
}  // namespace berth::threephase
