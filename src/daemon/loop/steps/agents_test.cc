// Tests of the agents step (agents.h): the three-phase path through berth-agents, on the injected
// clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

TEST_F(AgentReconcilerTest, ReplicasAreBoundByAgentsAndReleasedWhenStopped) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 4}, {"task", {{"resources", {{"cpu", 3}}}}}})
          .ok());
  SettleWithAgents();
  std::set<std::string> nodes;
  const Json tasks = (*ListTasks(store_, ""))["tasks"];
  ASSERT_EQ(tasks.size(), 4u);
  for (const Json& t : tasks) {
    EXPECT_EQ(t["state"], "running") << t.dump();
    EXPECT_EQ(t.value("agent", ""), t.value("node", "").substr(0, 1)) << t.dump();
    nodes.insert(t.value("node", ""));
  }
  EXPECT_EQ(nodes.size(), 4u);  // 3 of 4 CPUs each: one task per node
  EXPECT_EQ(Bindings(), 4u);

  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 1}}).ok());
  SettleWithAgents();
  EXPECT_EQ(Bindings(), 1u);  // the three stopped tasks gave their nodes back
  EXPECT_EQ(placement_.counters().released.load(), 3u);
  ASSERT_TRUE(services_.Remove("web").ok());
  SettleWithAgents();
  EXPECT_EQ(Bindings(), 0u);
}

TEST_F(AgentReconcilerTest, ATaskNoAgentCanTakeStaysPendingWithTheReason) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "big"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 8}}}}}})
          .ok());
  SettleWithAgents();
  const Json why = *WhyTask(store_, "big.1");
  EXPECT_EQ(why["state"], "pending");
  EXPECT_NE(why["reason"].get<std::string>().find("no cluster agent could place the task: failed "
                                                  "after 2 attempts"),
            std::string::npos)
      << why.dump();
  EXPECT_EQ(Bindings(), 0u);
  // Not handed out again before retry_after (an hour here).
  EXPECT_EQ(agent_reconciler_.RunPass(clock_.Now())->wrote, false);
  EXPECT_EQ(placement_.counters().submitted.load(), 1u);
}

TEST_F(AgentReconcilerTest, JobTasksAreAdmittedOnTheAgentsNodesAndReleasedOnCompletion) {
  Result<Json> job = jobs_.Submit(Json{{"id", "build"},
                                       {"requestor", "ci"},
                                       {"task", {{"resources", {{"cpu", 1}}}}},
                                       {"tasks", Json::array({Json{{"name", "compile"}}})}});
  ASSERT_TRUE(job.ok()) << job.status().message();
  SettleWithAgents();
  EXPECT_EQ((*WhyTask(store_, "build.1"))["state"], "running");
  EXPECT_EQ(Bindings(), 1u);
  clock_.Advance(std::chrono::seconds(1));  // the default simulated duration
  SettleWithAgents();
  const Json task = *WhyTask(store_, "build.1");
  EXPECT_EQ(task["state"], "complete") << task.dump();
  EXPECT_EQ(Bindings(), 0u);
  EXPECT_EQ(placement_.counters().bound.load(), 1u);
  EXPECT_EQ(placement_.counters().released.load(), 1u);
}

TEST_F(AgentReconcilerTest, GlobalServicesGetAPinnedTaskOnEachEligibleAgentNode) {
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "mon"},
                               {"mode", "global"},
                               {"task",
                                {{"resources", {{"cpu", 3}}},
                                 {"constraints", Json::array({"node.labels.slot==0"})}}}})
                  .ok());
  SettleWithAgents();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"mon.a0", "running@a0"},
                                                         {"mon.b0", "running@b0"}}));
  EXPECT_EQ((*GetTask(store_, "mon.b0")).value("agent", ""), "b");
  EXPECT_EQ(Bindings(), 2u);

  // Every node is eligible, but a0 and b0 have 1 CPU left of 4.
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "log"}, {"mode", "global"}, {"task", {{"resources", {{"cpu", 2}}}}}})
          .ok());
  SettleWithAgents();
  EXPECT_EQ(Tasks()["log.a1"], "running@a1");
  EXPECT_EQ(Tasks()["log.b1"], "running@b1");
  const Json why = *WhyTask(store_, "log.a0");
  EXPECT_EQ(why["state"], "pending");
  EXPECT_NE(why["reason"].get<std::string>().find("node 'a0': insufficient resources on 1 node"),
            std::string::npos)
      << why.dump();
  EXPECT_EQ(Bindings(), 4u);

  ASSERT_TRUE(services_.Remove("mon").ok());
  ASSERT_TRUE(services_.Remove("log").ok());
  SettleWithAgents();
  EXPECT_EQ(Bindings(), 0u);
  EXPECT_EQ(placement_.counters().released.load(), 4u);  // not the pending ones
}

TEST_F(AgentReconcilerTest, AfterARestartBindingsNoStoredTaskHoldsAreReleased) {
  ASSERT_TRUE(services_.Create(Json{{"id", "web"}, {"replicas", 1}}).ok());
  SettleWithAgents();
  ASSERT_EQ(Bindings(), 1u);
  // A binding made just before berthd died, never stored.
  auto spec = std::make_shared<TaskSpec>();
  ASSERT_EQ(b_.Commit({{"web.2", 0, spec, {}, {}, {}}, 1, "b1"}).outcome,
            agent::CommitOutcome::kBound);
  ASSERT_EQ(Bindings(), 2u);

  // berthd restarts: new placement and reconciler over the same agents and store.
  AgentPlacement restarted{{&ta_, &tb_}, clock_, Options()};
  restarted.Start(nullptr);
  Reconciler reconciler{store_, &restarted};
  ASSERT_TRUE(reconciler.RunPass(clock_.Now()).ok());
  ASSERT_TRUE(restarted.WaitCalls(std::chrono::seconds(10)));  // the check, off the loop
  EXPECT_EQ(Bindings(), 1u);                                   // the stored task keeps its binding
  EXPECT_EQ(restarted.counters().stray_released.load(), 1u);
  EXPECT_FALSE(restarted.BindingsDue());  // until check_bindings_every has passed
}

// An agent whose calls hang until the test lets them go: releases and
// binding checks on it must not hold up a pass.
class HangingTransport final : public threephase::AgentTransport {
 public:
  explicit HangingTransport(agent::Agent& agent) : inner_(agent) {}
  void Hang(bool on) {
    {
      std::lock_guard lock(mu_);
      hanging_ = on;
    }
    cv_.notify_all();
  }
  const std::string& agent_id() const override { return inner_.agent_id(); }
  Result<agent::SampleResponse> Sample(const agent::SampleRequest& r, Duration t) override {
    return inner_.Sample(r, t);
  }
  Result<agent::CommitResponse> Commit(const agent::CommitRequest& r, Duration t) override {
    return inner_.Commit(r, t);
  }
  Result<size_t> Release(const std::vector<std::string>& ids, Duration t) override {
    Wait();
    return inner_.Release(ids, t);
  }
  Result<std::vector<std::string>> Bindings(Duration t) override {
    Wait();
    return inner_.Bindings(t);
  }
  Result<std::vector<std::string>> Eligible(const TaskSpec& spec, Duration t) override {
    return inner_.Eligible(spec, t);
  }
  uint32_t node_count() const override { return inner_.node_count(); }

 private:
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !hanging_; });
  }
  threephase::InProcessTransport inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool hanging_ = false;
};

// Passes go on while an agent does not answer a binding check or a
// release; what it answers later is applied by a later pass.
TEST_F(AgentReconcilerTest, PassesDoNotWaitForAgentCalls) {
  HangingTransport hanging(b_);
  AgentPlacement placement{{&ta_, &hanging}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  hanging.Hang(true);  // the first pass's binding check of b hangs
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 4}, {"task", {{"resources", {{"cpu", 3}}}}}})
          .ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(reconciler.RunPass(clock_.Now()).ok());
    ASSERT_TRUE(placement.WaitIdle(std::chrono::seconds(10)));
  }
  EXPECT_EQ(Bindings(), 4u);  // placed meanwhile, on both agents
  EXPECT_TRUE(placement.Busy());
  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 0}}).ok());
  Result<PassSummary> stop = reconciler.RunPass(clock_.Now());  // releases queue behind the check
  ASSERT_TRUE(stop.ok());
  EXPECT_EQ(stop->stopped, 4);
  EXPECT_EQ(b_.bindings(), 2u);
  hanging.Hang(false);
  SettleWith(reconciler, placement);
  EXPECT_EQ(Bindings(), 0u);
  EXPECT_EQ(placement.counters().stray_released.load(), 0u);
}

// A task whose earlier binding is still being released is not submitted
// again: an agent releases every binding of a task id, so the release
// would take the new binding with it (and, on a node fleet, stop the new
// run). When the release returns, the loop is woken to submit it.
TEST_F(AgentReconcilerTest, ATaskIsNotSubmittedWhileItsEarlierBindingIsBeingReleased) {
  HangingTransport hanging(a_);
  AgentPlacement placement{{&hanging}, clock_, Options()};
  std::atomic<int> wakes{0};
  placement.Start([&] { ++wakes; });
  auto task = [] {
    return agent::PlacementTask{"job.3", 0, std::make_shared<TaskSpec>(), {}, {}, {}};
  };
  hanging.Hang(true);
  placement.Release({{hanging.agent_id(), {"job.3"}}});
  EXPECT_FALSE(placement.Submit(task()));
  const int before = wakes.load();
  hanging.Hang(false);
  ASSERT_TRUE(placement.WaitCalls(std::chrono::seconds(10)));
  EXPECT_GT(wakes.load(), before);
  EXPECT_TRUE(placement.Submit(task()));
  placement.Stop();
}

// A new spec version stops every task and starts new ones in one pass:
// each running task keeps exactly one binding, and none of the new tasks
// loses its binding to the release of the task it replaces.
TEST_F(AgentReconcilerTest, ANewSpecVersionLeavesOneBindingPerRunningTask) {
  const Json all_at_once = {{"parallelism", 0}};
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "web"},
                               {"replicas", 2},
                               {"update_config", all_at_once},
                               {"task", {{"resources", {{"cpu", 1}}}}}})
                  .ok());
  ASSERT_TRUE(
      services_.Create(Json{{"id", "mon"}, {"mode", "global"}, {"update_config", all_at_once}})
          .ok());
  SettleWithAgents();
  ASSERT_EQ(Bindings(), 6u);
  // New templates that fit beside the old tasks, whose bindings are released
  // only after the pass that replaces them.
  const Json memory = {{"resources", {{"cpu", 1}, {"memory", "1Gi"}}}};
  ASSERT_TRUE(services_.Update("web", Json{{"task", memory}}).ok());
  ASSERT_TRUE(services_.Update("mon", Json{{"task", memory}}).ok());
  SettleWithAgents();
  int running = 0;
  const Json tasks = (*ListTasks(store_, ""))["tasks"];
  for (const Json& t : tasks) {
    if (t["state"] != "running") continue;
    ++running;
    EXPECT_EQ(t["spec_version"], 2) << t.dump();
  }
  EXPECT_EQ(running, 6) << tasks.dump(1);
  EXPECT_EQ(Bindings(), 6u);
  // The agents name the new version's nodes after the pass that stopped the
  // old tasks, so the replacement is a new task beside the old one's record.
  EXPECT_EQ(Tasks()["mon.a0#1"], "shutdown@a0");
  EXPECT_EQ(Tasks()["mon.a0#2"], "running@a0");
}

// Agents restart and forget their bindings: b with the same nodes (its tasks
// are bound again), a with other nodes (its tasks cannot be, so they fail
// and are replaced where there is room).
TEST_F(AgentReconcilerTest, BindingsAnAgentLostAreBoundAgainOrTheirTasksReplaced) {
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "web"},
                               {"replicas", 4},
                               {"task", {{"resources", {{"cpu", 3}}}}},
                               {"restart_policy", {{"delay", "0s"}}}})
                  .ok());
  SettleWithAgents();
  ASSERT_EQ(a_.bindings(), 2u);  // 3 of 4 CPUs: one task per node
  ASSERT_EQ(b_.Release(b_.BoundTasks()), 2u);
  std::vector<Node> other(1);
  other[0].id = "a9";
  other[0].resources = {4000, int64_t{8} << 30, {}};
  agent::Agent a_restarted{{.id = "a"}, other};
  threephase::InProcessTransport ta_restarted{a_restarted};

  AgentPlacement placement{{&ta_restarted, &tb_}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  SettleWith(reconciler, placement);
  EXPECT_EQ(placement.counters().rebound.load(), 2u);
  EXPECT_EQ(placement.counters().lost.load(), 2u);
  EXPECT_EQ(b_.bindings(), 2u);
  EXPECT_EQ(a_restarted.bindings(), 1u);  // one replacement on a9, the other has no room
  int failed = 0, running = 0, pending = 0;
  const Json tasks = (*ListTasks(store_, ""))["tasks"];
  for (const Json& t : tasks) {
    failed += t["state"] == "failed";
    running += t["state"] == "running";
    pending += t["state"] == "pending";
    if (t["state"] != "failed") continue;
    EXPECT_NE(t["message"].get<std::string>().find(
                  "no longer held the task (restarted?) and could not bind it again on node 'a"),
              std::string::npos)
        << t.dump();
  }
  EXPECT_EQ(failed, 2) << tasks.dump(1);
  EXPECT_EQ(running, 3) << tasks.dump(1);
  EXPECT_EQ(pending, 1);
}

// An agent restarted with fewer nodes: the global task of the node it no
// longer has fails (its binding is lost) and its restart is retired with the
// reason, instead of waiting forever for a node that is gone; the agent's
// other node keeps its task.
TEST_F(AgentReconcilerTest, AGlobalTaskOfANodeItsAgentNoLongerHasIsRetired) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "glob"}, {"mode", "global"}, {"restart_policy", {{"delay", "0s"}}}})
          .ok());
  SettleWithAgents();
  ASSERT_EQ(Bindings(), 4u);
  ASSERT_EQ(b_.Release(b_.BoundTasks()), 2u);
  agent::Agent b_restarted{{.id = "b"}, {Nodes("b")[0]}};  // without b1
  threephase::InProcessTransport tb_restarted{b_restarted};
  AgentPlacement placement{{&ta_, &tb_restarted}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  SettleWith(reconciler, placement);
  const std::map<std::string, std::string> tasks = Tasks();
  EXPECT_EQ(tasks.at("glob.b0"), "running@b0");  // bound again
  EXPECT_EQ(tasks.at("glob.b1#1"), "failed@b1");
  EXPECT_EQ(tasks.at("glob.b1#2"), "shutdown@b1");
  EXPECT_EQ(tasks.size(), 5u) << "no task waits on b1";
  const Json retired = (*ListTasks(store_, "glob"))["tasks"];
  std::string reason;
  for (const Json& t : retired)
    if (t["state"] == "shutdown") reason = t["message"];
  EXPECT_EQ(reason,
            "agent b no longer offers node 'b1' to the service (gone, or no longer eligible)");
}

TEST_F(AgentReconcilerTest, AJobTaskItsAgentLostWaitsAgainAndRunsElsewhere) {
  ASSERT_TRUE(jobs_
                  .Submit(Json{{"id", "build"},
                               {"requestor", "ci"},
                               {"task", {{"resources", {{"cpu", 1}}}}},
                               {"tasks", Json::array({Json{{"name", "compile"}}})}})
                  .ok());
  SettleWithAgents();
  ASSERT_EQ((*GetTask(store_, "build.1"))["state"], "running");
  // Both agents restart with other nodes.
  std::vector<Node> a_nodes(1), b_nodes(1);
  a_nodes[0].id = "a9";
  b_nodes[0].id = "b9";
  a_nodes[0].resources = b_nodes[0].resources = {4000, int64_t{8} << 30, {}};
  agent::Agent a9{{.id = "a"}, a_nodes}, b9{{.id = "b"}, b_nodes};
  threephase::InProcessTransport ta9{a9}, tb9{b9};
  AgentPlacement placement{{&ta9, &tb9}, clock_, Options()};
  placement.Start(nullptr);
  Reconciler reconciler{store_, &placement};
  SettleWith(reconciler, placement);
  EXPECT_EQ(placement.counters().lost.load(), 1u);
  const Json task = *GetTask(store_, "build.1");
  EXPECT_EQ(task["state"], "running") << task.dump();
  EXPECT_EQ(task["node"].get<std::string>().substr(1), "9") << task.dump();
  EXPECT_EQ(a9.bindings() + b9.bindings(), 1u);
}

}  // namespace
}  // namespace berth::daemon
