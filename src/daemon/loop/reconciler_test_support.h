// Test support for the control loop: a Reconciler on the injected clock and
// the in-memory store with the registries that write what it reads
// (ReconcilerTest), the same placing through two in-process agents
// (AgentReconcilerTest), and jobs to submit (Job, StatesOf).
#pragma once

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "agent/agent.h"
#include "daemon/daemon_test_support.h"
#include "daemon/loop/reconciler.h"
#include "daemon/loop/stored_task.h"
#include "daemon/registry/class_registry.h"
#include "daemon/registry/job_registry.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "daemon/registry/task_views.h"
#include "orchestrator/orchestrator.h"
#include "store/memory_store.h"
#include "threephase/transport.h"

namespace berth::daemon {

using api::Json;

class ReconcilerTest : public testing::Test {
 protected:
  void AddNode(const std::string& id, int cpu) {
    ASSERT_TRUE(
        nodes_.Register(Json{{"id", id}, {"resources", {{"cpu", cpu}, {"memory", "8Gi"}}}}).ok());
  }
  // Runs passes until one changes nothing; returns how many wrote.
  int Settle() {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
      EXPECT_TRUE(pass.ok()) << pass.status().message();
      if (!pass.ok() || !pass->wrote) return i;
    }
    ADD_FAILURE() << "no settled state after 10 passes";
    return -1;
  }
  // task -> "state@node", a task named as users see it ("web.1", a job's
  // "j.1"); when a slot or node has had several tasks, "web.1#k" is its
  // k-th, oldest first.
  std::map<std::string, std::string> Tasks() {
    const Json listed = (*ListTasks(store_, ""))["tasks"];
    return ByTaskName(listed, [](const Json& t) {
      return t["state"].get<std::string>() + "@" + t.value("node", "");
    });
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::MemoryStore* backing_ = new store::MemoryStore;  // owned by store_
  store::WatchedStore store_{std::unique_ptr<store::Store>(backing_)};
  NodeRegistry nodes_{store_};
  JobRegistry jobs_{store_, clock_};
  ClassRegistry classes_{store_};
  ServiceRegistry services_{store_};
  Reconciler reconciler_{store_};
};

// A job of `count` tasks of 1 CPU that run `seconds`.
inline Json Job(const std::string& id, const std::string& requestor, int count, int seconds) {
  Json tasks = Json::array();
  for (int i = 0; i < count; ++i) tasks.push_back({{"duration", seconds}});
  return {{"id", id},
          {"requestor", requestor},
          {"task", {{"resources", {{"cpu", 1}}}}},
          {"tasks", tasks}};
}

inline std::map<std::string, int> StatesOf(const Json& tasks, const std::string& job) {
  std::map<std::string, int> states;
  for (const Json& t : tasks)
    if (t.value("job", "") == job) ++states[t["state"]];
  return states;
}

// The three-phase path: two in-process agents of two 4-CPU nodes each.
class AgentReconcilerTest : public ReconcilerTest {
 protected:
  static std::vector<Node> Nodes(const std::string& prefix) {
    std::vector<Node> nodes(2);
    for (size_t i = 0; i < nodes.size(); ++i) {
      nodes[i].id = prefix + std::to_string(i);
      nodes[i].resources = {4000, int64_t{8} << 30, {}};
      nodes[i].labels["slot"] = std::to_string(i);
    }
    return nodes;
  }
  static AgentPlacementOptions Options() {
    AgentPlacementOptions options;
    options.scheduler.cluster_percent = 100;
    options.scheduler.node_basis_points = 10'000;
    options.scheduler.max_attempts = 2;
    options.scheduler.samplers = 1;
    // One pipeline trying every node: each decision follows the commit
    // before it, so a task finds the free node even on a sample taken
    // before the others were bound. With two pipelines, a task could
    // conflict on every candidate in both attempts and wait retry_after,
    // depending on thread timing (seen under tsan).
    options.scheduler.decision_pipelines = 1;
    options.scheduler.commit_candidates = 4;
    options.retry_after = std::chrono::hours(1);  // one try per test
    return options;
  }
  void SetUp() override { placement_.Start(nullptr); }
  // Passes until settled, letting the agents decide in between.
  void SettleWithAgents() { SettleWith(agent_reconciler_, placement_); }
  // The same with another berthd (a restarted one) over the same store.
  void SettleWith(Reconciler& reconciler, AgentPlacement& placement) {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler.RunPass(clock_.Now());
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      ASSERT_TRUE(placement.WaitIdle(std::chrono::seconds(10)));
      ASSERT_TRUE(placement.WaitCalls(std::chrono::seconds(10)));
      if (!pass->wrote && !pass->waiting) return;
    }
    FAIL() << "no settled state after 10 passes";
  }
  size_t Bindings() const { return a_.bindings() + b_.bindings(); }

  agent::Agent a_{{.id = "a"}, Nodes("a")}, b_{{.id = "b"}, Nodes("b")};
  threephase::InProcessTransport ta_{a_}, tb_{b_};
  AgentPlacement placement_{{&ta_, &tb_}, clock_, Options()};
  Reconciler agent_reconciler_{store_, &placement_};
};

}  // namespace berth::daemon
