// Tests of the pass as a whole (reconciler.h): what a pass stores, what it
// visits, and how it recovers from a stale state. Each step's behaviour is
// tested beside it, under steps/.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

// A pass that writes more than kParallelEncodeFrom tasks encodes them on
// two threads: every stored body is still its task's (id, node, state).
TEST_F(ReconcilerTest, ALargePassStoresEveryTaskWhole) {
  AddNode("n1", 64);
  AddNode("n2", 64);
  ASSERT_TRUE(services_.Create(Json{{"id", "big"}, {"replicas", 25'000}}).ok());
  Result<PassSummary> first = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->assigned, 25'000);
  const std::map<std::string, std::string> tasks = Tasks();
  ASSERT_EQ(tasks.size(), 25'000u);
  std::map<std::string, int> by_state_and_node;
  for (const auto& [id, state_at_node] : tasks) ++by_state_and_node[state_at_node];
  EXPECT_EQ(by_state_and_node,
            (std::map<std::string, int>{{"assigned@n1", 12'500}, {"assigned@n2", 12'500}}));
  EXPECT_EQ(tasks.count("big.1") + tasks.count("big.25000"), 2u);
  const std::vector<store::StoredObject> stored = *store_.List("task");
  for (const store::StoredObject& o : stored) {
    const StoredTask t = DecodeStoredTask(api::Json::parse(o.body), o.id);
    ASSERT_EQ(t.service, "big");
    ASSERT_EQ(t.state, TaskState::kAssigned) << o.id;
    // The pass's serial: the store's revision when it began (nodes, service).
    ASSERT_EQ(o.id, "big." + std::to_string(t.slot) + ".3");
    ASSERT_EQ(t.node, tasks.at("big." + std::to_string(t.slot)).substr(9)) << o.id;
  }
}

// On a store that takes a few writes a commit (etcd's --max-txn-ops), a
// pass is committed in parts at different revisions. The next pass writes
// the same tasks (assigned, then running) on the revision each part gave
// them, so it is not refused as a race and the state is not read again.
// Tasks that end in such a pass join their history at their own revision,
// so the history limit (0 here: none kept) still deletes them.
TEST(ReconcilerInParts, APassCommittedInPartsIsFollowedWithoutAConflict) {
  ManualClock clock{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::WatchedStore store{std::make_unique<store::MemoryStore>(store::Store::BatchLimits{4, 0})};
  NodeRegistry nodes{store};
  ServiceRegistry services{store};
  ReconcilerOptions options;
  options.task_history_limit = 0;
  Reconciler reconciler{store, nullptr, nullptr, options};
  const auto settle = [&] {
    int wrote = 0;
    for (int i = 0; i < 5; ++i) {
      Result<PassSummary> pass = reconciler.RunPass(clock.Now());
      EXPECT_TRUE(pass.ok()) << "pass " << i << ": " << pass.status().message();
      if (!pass.ok() || !pass->wrote) break;
      ++wrote;
    }
    return wrote;
  };
  const auto states = [&] {
    std::map<std::string, int> counted;
    const Json listed = (*ListTasks(store, ""))["tasks"];
    for (const Json& t : listed) ++counted[t["state"].get<std::string>()];
    return counted;
  };
  ASSERT_TRUE(nodes.Register(Json{{"id", "n1"}, {"resources", {{"cpu", 16}}}}).ok());
  ASSERT_TRUE(services.Create(Json{{"id", "web"}, {"replicas", 10}}).ok());
  EXPECT_EQ(settle(), 2);  // assigned, then running: each in three parts
  EXPECT_EQ(states(), (std::map<std::string, int>{{"running", 10}}));
  ASSERT_TRUE(services.Update("web", Json{{"replicas", 0}}).ok());
  settle();
  clock.Advance(std::chrono::minutes(1));  // past the tasks' stop grace period
  settle();
  EXPECT_EQ(states(), (std::map<std::string, int>{}));
  EXPECT_EQ(store.lists(), 1u);  // the first pass's only
}

// A task's wait from its creation (a job's: its submission) to its first
// assignment and its first run goes to the latency histograms once the pass
// that stored it committed; the engine's time, per group it searched.
TEST_F(ReconcilerTest, TasksAddTheirWaitSinceCreationToTheLatencyHistograms) {
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 2}, {"task", {{"resources", {{"cpu", 1}}}}}})
          .ok());
  ASSERT_TRUE(reconciler_.RunPass(clock_.Now()).ok());  // no node: pending
  EXPECT_EQ(reconciler_.create_to_assigned().Cumulative().back(), 0u);
  clock_.Advance(std::chrono::seconds(3));
  AddNode("n1", 4);
  Settle();
  ASSERT_EQ(Tasks(),
            (std::map<std::string, std::string>{{"web.1", "running@n1"}, {"web.2", "running@n1"}}));
  EXPECT_EQ(reconciler_.create_to_assigned().Cumulative().back(), 2u);
  EXPECT_DOUBLE_EQ(reconciler_.create_to_assigned().sum_seconds(), 6.0);
  EXPECT_EQ(reconciler_.create_to_running().Cumulative().back(), 2u);
  EXPECT_DOUBLE_EQ(reconciler_.create_to_running().sum_seconds(), 6.0);

  ASSERT_TRUE(jobs_.Submit(Job("build", "ci", 1, 60)).ok());
  clock_.Advance(std::chrono::milliseconds(1500));
  Settle();
  EXPECT_EQ(reconciler_.create_to_assigned().Cumulative().back(), 3u);
  EXPECT_DOUBLE_EQ(reconciler_.create_to_assigned().sum_seconds(), 7.5);
  EXPECT_DOUBLE_EQ(reconciler_.create_to_running().sum_seconds(), 7.5);
  // web's group with no node, then with n1; the job's task.
  EXPECT_EQ(reconciler_.engine_group_durations().Cumulative().back(), 3u);
}

// The loop keeps what it read between passes. A change it did not see (made
// here behind the watch) makes its next commit fail on a precondition; the
// pass after that reads everything again and goes on from the stored state.
TEST_F(ReconcilerTest, AStaleKeptStateLosesItsCommitAndIsReadAgain) {
  AddNode("n1", 4);
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "web"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 1}}}}}})
          .ok());
  ASSERT_TRUE(reconciler_.RunPass(clock_.Now()).ok());  // created and assigned
  Json task = *GetTask(store_, "web.1");
  const std::string id = task["id"];
  for (const char* view_only : {"revision", "id", "name"}) task.erase(view_only);
  task["message"] = "written behind the watch";
  ASSERT_TRUE(backing_->Commit({store::Write::Put("task", id, task.dump())}).ok());
  Result<PassSummary> stale = reconciler_.RunPass(clock_.Now());  // would start web.1
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_EQ(Settle(), 1);
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"web.1", "running@n1"}}));
}

// A pass that handles one change looks at what changed, not at every task:
// one replica fewer of 2,000 touches the task it stops; one more, the task
// it makes; an ended timer, its task.
TEST_F(ReconcilerTest, APassForOneChangeVisitsOnlyWhatChanged) {
  AddNode("n1", 4000);
  ASSERT_TRUE(services_.Create(Json{{"id", "big"}, {"replicas", 2000}}).ok());
  ASSERT_TRUE(
      services_.Create(Json{{"id", "short"}, {"replicas", 1}, {"run", {{"duration", 5}}}}).ok());
  Settle();
  ASSERT_TRUE(services_.Update("big", Json{{"replicas", 1999}}).ok());
  Result<PassSummary> down = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(down.ok());
  EXPECT_EQ(down->stopped, 1);
  EXPECT_FALSE(down->visited_all);
  EXPECT_EQ(down->visited, 1u);
  EXPECT_EQ(Tasks().at("big.2000"), "shutdown@n1");
  Settle();
  ASSERT_TRUE(services_.Update("big", Json{{"replicas", 2000}}).ok());
  Result<PassSummary> up = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->created, 1);
  EXPECT_LE(up->visited, 2u);  // the new task, and the one stopped before (now in history)
  Settle();
  clock_.Advance(std::chrono::seconds(5));  // short.1 ends
  Result<PassSummary> ended = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(ended.ok());
  EXPECT_FALSE(ended->visited_all);
  EXPECT_LE(ended->visited, 2u);                      // short.1, and its replacement
  EXPECT_EQ(Tasks().at("short.1#1"), "complete@n1");  // its replacement waits 5 s
  // A new node goes to the engine alone; a removed one concerns every task.
  Settle();
  AddNode("n2", 4);
  Result<PassSummary> added = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(added.ok());
  EXPECT_FALSE(added->visited_all);
  EXPECT_EQ(added->visited, 0u);
  ASSERT_TRUE(nodes_.Remove("n2").ok());
  Result<PassSummary> removed = reconciler_.RunPass(clock_.Now());
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(removed->visited_all);
}

// The incremental passes leave the store where a pass that reads and visits
// everything (a new reconciler) finds nothing to do, after every step of a
// random sequence of service, node and time changes.
TEST_F(ReconcilerTest, IncrementalPassesLeaveNothingForAFullPass) {
  std::mt19937_64 random(14);  // 300 steps: services overflow the nodes often
  auto pick = [&](uint64_t n) { return random() % n; };
  std::vector<std::string> services, nodes;
  int next = 0;
  for (int step = 0; step < 300; ++step) {
    const uint64_t op = pick(8);
    if (op == 0 || services.empty()) {
      const std::string id = "s" + std::to_string(next++);
      Json service = {{"id", id}, {"task", {{"resources", {{"cpu", pick(2)}}}}}};
      if (pick(4) == 0)
        service["mode"] = "global";
      else
        service["replicas"] = pick(12);
      if (pick(2) == 0)
        service["run"] = {{"duration", 1 + pick(3)}, {"outcome", pick(2) ? "fail" : "complete"}};
      ASSERT_TRUE(services_.Create(service).ok()) << service.dump();
      services.push_back(id);
    } else if (op == 1 || op == 2) {
      (void)services_.Update(services[pick(services.size())], Json{{"replicas", pick(12)}});
    } else if (op == 3) {
      const size_t i = pick(services.size());
      ASSERT_TRUE(services_.Remove(services[i]).ok());
      services.erase(services.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 4 || nodes.empty()) {
      nodes.push_back("n" + std::to_string(next++));
      AddNode(nodes.back(), 1 + static_cast<int>(pick(6)));
    } else if (op == 5) {
      const size_t i = pick(nodes.size());
      ASSERT_TRUE(nodes_.Remove(nodes[i]).ok());
      nodes.erase(nodes.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 6) {
      (void)services_.Update(services[pick(services.size())],
                             Json{{"task", {{"resources", {{"cpu", pick(2)}}}}}});
    } else {
      clock_.Advance(std::chrono::milliseconds(pick(2500)));
    }
    ASSERT_GE(Settle(), 0) << "step " << step;
    store::WatchedStore fresh_store(std::shared_ptr<store::Store>(backing_, [](store::Store*) {}));
    Reconciler fresh(fresh_store);
    Result<PassSummary> full = fresh.RunPass(clock_.Now());
    ASSERT_TRUE(full.ok()) << full.status().message();
    ASSERT_FALSE(full->wrote) << "step " << step << " (op " << op << "): created " << full->created
                              << ", assigned " << full->assigned << ", started " << full->started
                              << ", stopped " << full->stopped << ", pruned " << full->pruned;
  }
}

}  // namespace
}  // namespace berth::daemon
