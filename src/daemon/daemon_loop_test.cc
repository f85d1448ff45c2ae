// berthd's control loop, driven deterministically: a Daemon on MemoryStore
// and a ManualClock. Time moves only when a test moves it, and
// ControlLoop::WaitBlocked tells when the loop has caught up, so "no pass
// happened" is checked without waiting for anything to not happen.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "daemon/daemon_test_support.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

class LoopTest : public DaemonTest {
 protected:
  void SetUp() override {}  // each test opens with its window
  // berthd stops before the clock and store it uses go.
  void TearDown() override { Close(); }

  void Configure(DaemonOptions& options) override {
    options.store = store_;
    options.clock = &clock_;
    options.loop.window = window_;
    options.reconciler.task_history_limit = history_limit_;
    options.executor = executor_;
  }
  void OpenWith(placement::BatchWindowOptions window) {
    window_ = window;
    Open(1 << 20);
    CatchUp();
  }
  // Waits until the loop has acted on everything it can at the clock's
  // current time.
  void CatchUp() { ASSERT_TRUE(daemon_->loop().WaitBlocked(std::chrono::seconds(20))); }
  // Moves the clock once the loop has taken every change so far (so each
  // change is seen at the time it was made).
  void Advance(Duration d) {
    CatchUp();
    clock_.Advance(d);
    CatchUp();
  }
  uint64_t Passes() { return daemon_->loop().passes(); }
  // task id -> state
  // task -> state, a task named as users see it ("web.1"); when a slot has
  // had several tasks, "web.1#k" is its k-th, oldest first.
  std::map<std::string, std::string> Tasks() {
    const auto [status, body] = Call("GET", "/v1/tasks");
    EXPECT_EQ(status, 200) << body.dump();
    return ByTaskName(body["tasks"], [](const Json& t) { return t["state"].get<std::string>(); });
  }
  void AddNodes(int n) {
    for (int i = 1; i <= n; ++i)
      ASSERT_EQ(Call("POST", "/v1/nodes",
                     Json{{"id", "n" + std::to_string(i)}, {"resources", {{"cpu", 4}}}}.dump())
                    .first,
                201);
  }
  // Replacements follow at once: the restart delay is tested on its own.
  void CreateService(const std::string& id, int replicas, Json run = nullptr) {
    Json body{{"id", id},
              {"replicas", replicas},
              {"task", {{"resources", {{"cpu", "100m"}}}}},
              {"restart_policy", {{"delay", "0s"}}}};
    if (!run.is_null()) body["run"] = run;
    ASSERT_EQ(Call("POST", "/v1/services", body.dump()).first, 201);
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  std::shared_ptr<store::MemoryStore> store_ = std::make_shared<store::MemoryStore>();
  placement::BatchWindowOptions window_;
  int64_t history_limit_ = ReconcilerOptions().task_history_limit;
  executor::Executor* executor_ = nullptr;  // null: the simulated one
};

// With the default window a change is acted on at once: the clock never
// moves, yet the replicas are created, placed and started.
TEST_F(LoopTest, TheDefaultWindowActsWithoutWaiting) {
  OpenWith(ControlLoopOptions().window);
  AddNodes(2);
  CreateService("web", 3);
  CatchUp();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{
                         {"web.1", "running"}, {"web.2", "running"}, {"web.3", "running"}}));
}

// An idle berthd runs no pass, however much time goes by and whatever it
// stores: nothing is due without a change or a timer.
TEST_F(LoopTest, AnIdleDaemonRunsNoPass) {
  OpenWith(ControlLoopOptions().window);
  AddNodes(2);
  CreateService("web", 3);
  CatchUp();
  const uint64_t passes = Passes();
  Advance(std::chrono::hours(24));
  EXPECT_EQ(Passes(), passes);
  CreateService("api", 1);
  CatchUp();
  EXPECT_GT(Passes(), passes);
  EXPECT_EQ(Tasks()["api.1"], "running");
}

// The spec's window (quiet 50 ms, 1 s cap): each change restarts the quiet
// wait, and the changes it gathered are decided by one pass.
TEST_F(LoopTest, TheSpecWindowWaitsForQuietAndGroupsTheChanges) {
  OpenWith({Duration{50}, Duration{1000}});
  AddNodes(2);
  Advance(Duration{50});  // the nodes' pass
  CreateService("a", 2);
  Advance(Duration{49});
  EXPECT_TRUE(Tasks().empty());
  CreateService("b", 2);  // restarts the quiet wait
  Advance(Duration{49});
  EXPECT_TRUE(Tasks().empty());
  const uint64_t passes = Passes();
  Advance(Duration{1});
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{
                {"a.1", "running"}, {"a.2", "running"}, {"b.1", "running"}, {"b.2", "running"}}));
  // One pass placed all four, one started them, one found nothing to do.
  EXPECT_EQ(Passes(), passes + 3);
}

// Changes that never pause are still decided within the cap after the
// first of them.
TEST_F(LoopTest, TheSpecWindowNeverDelaysBeyondItsCap) {
  OpenWith({Duration{50}, Duration{1000}});
  AddNodes(1);
  Advance(Duration{50});
  const uint64_t passes = Passes();
  for (int i = 0; i < 24; ++i) {  // a change every 40 ms for 960 ms
    ASSERT_EQ(
        Call("PATCH", "/v1/nodes/n1", Json{{"labels", {{"i", std::to_string(i)}}}}.dump()).first,
        200);
    Advance(Duration{40});
  }
  EXPECT_EQ(Passes(), passes);
  ASSERT_EQ(Call("PATCH", "/v1/nodes/n1", R"({"labels": {"i": "last"}})").first, 200);
  Advance(Duration{39});  // 999 ms after the first change
  EXPECT_EQ(Passes(), passes);
  Advance(Duration{1});
  EXPECT_EQ(Passes(), passes + 1);
}

// The simulated executor's timer: a task with a 600 s run ends when the clock
// reaches its end, in a pass no change asked for; then it is replaced.
TEST_F(LoopTest, ASimulatedTaskEndsWhenItsTimeComes) {
  OpenWith(ControlLoopOptions().window);
  AddNodes(1);
  CreateService("batch", 1, Json{{"duration", 600}, {"outcome", "complete"}});
  CatchUp();
  ASSERT_EQ(Tasks(), (std::map<std::string, std::string>{{"batch.1", "running"}}));
  Advance(std::chrono::seconds(599));
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"batch.1", "running"}}));
  Advance(std::chrono::seconds(1));
  const std::map<std::string, std::string> tasks = Tasks();
  EXPECT_EQ(tasks.at("batch.1#1"), "complete");
  EXPECT_EQ(tasks.at("batch.1#2"), "running");  // its replacement, in its slot
}

// A job's task runs for its duration on the injected clock, and its
// duration is recorded for admission's task choice.
TEST_F(LoopTest, AJobTaskCompletesAfterItsDurationOnTheInjectedClock) {
  OpenWith(ControlLoopOptions().window);
  AddNodes(1);
  ASSERT_EQ(
      Call("POST", "/v1/jobs", R"({"id": "j", "requestor": "ci", "tasks": [{"duration": 30}]})")
          .first,
      201);
  CatchUp();
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"j.1", "running"}}));
  Advance(std::chrono::seconds(29));
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"j.1", "running"}}));
  Advance(std::chrono::seconds(1));
  EXPECT_EQ(Tasks(), (std::map<std::string, std::string>{{"j.1", "complete"}}));
  EXPECT_EQ(Call("GET", "/v1/tasks/j.1").second["message"], "completed after 30000 ms (simulated)");
}

// An executor that records what the loop asks of it and ends a task when
// the test says so.
class RecordingExecutor final : public executor::Executor {
 public:
  std::optional<std::string> Start(const executor::TaskToRun& task, Timestamp) override {
    started.push_back(task.id + "@" + task.node);
    return "started by the recording executor";
  }
  std::optional<executor::Ended> Check(const executor::TaskToRun& task, Timestamp,
                                       std::optional<Timestamp>*) override {
    if (!exits.contains(task.id)) return std::nullopt;
    return executor::Ended{true, 5, "exited with status " + std::to_string(exits.at(task.id))};
  }
  void Stop(const executor::TaskToRun& task) override { stopped.push_back(task.id); }
  std::vector<std::string> TakeChanged() override { return std::exchange(changed, {}); }

  std::vector<std::string> started, stopped, changed;
  std::map<std::string, int> exits;  // written only while the loop waits
};

// The loop runs tasks through whatever executor it is given: it starts what
// was placed, stores how a task ended as the executor says, and stops what
// it takes off a node, without knowing what the executor does.
TEST_F(LoopTest, TheLoopDrivesAnyExecutorThroughItsInterface) {
  RecordingExecutor recording;
  executor_ = &recording;
  OpenWith(ControlLoopOptions().window);
  AddNodes(1);
  CreateService("web", 2);
  CatchUp();
  auto names = [](std::vector<std::string> ids) {  // sorted
    for (std::string& id : ids) {
      const size_t at = id.find('@');
      id = TaskName(id.substr(0, at)) + (at == std::string::npos ? "" : id.substr(at));
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  EXPECT_EQ(names(recording.started), (std::vector<std::string>{"web.1@n1", "web.2@n1"}));
  const Json first = Call("GET", "/v1/tasks/web.1").second;
  EXPECT_EQ(first["message"], "started by the recording executor");
  recording.exits[first["id"]] = 3;
  recording.changed.push_back(first["id"]);  // as a process executor reports an exit
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "n2"})").first, 201);  // any change: a pass
  CatchUp();
  EXPECT_EQ(Call("GET", "/v1/tasks/" + first["id"].get<std::string>()).second["message"],
            "exited with status 3");
  EXPECT_EQ(Tasks()["web.1#1"], "failed");
  EXPECT_EQ(Tasks()["web.1#2"], "running");  // restarted in its slot
  EXPECT_TRUE(recording.stopped.empty());    // it ended by itself
  ASSERT_EQ(Call("DELETE", "/v1/services/web").first, 200);
  CatchUp();
  EXPECT_EQ(names(recording.stopped), (std::vector<std::string>{"web.1", "web.2"}));
  Close();  // before `recording` goes
}

// Counts tasks by state.
std::map<std::string, int> ByState(const std::map<std::string, std::string>& tasks) {
  std::map<std::string, int> out;
  for (const auto& [id, state] : tasks) ++out[state];
  return out;
}

// A replica that fails every 10 s is replaced each time; of its ended tasks
// the history limit's worth stay (2 per slot here, 2 slots), the rest are
// deleted from the store.
TEST_F(LoopTest, EndedTasksBeyondTheHistoryLimitAreDeleted) {
  history_limit_ = 2;
  OpenWith(ControlLoopOptions().window);
  AddNodes(2);
  CreateService("flaky", 2, Json{{"duration", 10}, {"outcome", "fail"}});
  CatchUp();
  for (int round = 1; round <= 4; ++round) {
    Advance(std::chrono::seconds(10));
    const std::map<std::string, int> states = ByState(Tasks());
    EXPECT_EQ(states.at("running"), 2) << round;
    EXPECT_EQ(states.at("failed"), std::min(2 * round, 4)) << round;
  }
  // The kept ones are the latest failures.
  const Json listed = Call("GET", "/v1/tasks").second;
  for (const Json& t : listed["tasks"])
    if (t["state"] == "failed") {
      EXPECT_GE(*ParseRfc3339(t["updated_at"].get<std::string>()),
                *ParseRfc3339("2026-01-01T00:00:30Z"));
    }
  // What the store holds is what berthd shows: a berthd opened on it again
  // sees the same tasks and has nothing to change.
  const std::map<std::string, std::string> before = Tasks();
  Close();
  OpenWith(ControlLoopOptions().window);
  EXPECT_EQ(Tasks(), before);
}

// A negative limit keeps every ended task.
TEST_F(LoopTest, ANegativeHistoryLimitKeepsEveryEndedTask) {
  history_limit_ = -1;
  OpenWith(ControlLoopOptions().window);
  AddNodes(1);
  CreateService("flaky", 1, Json{{"duration", 10}, {"outcome", "fail"}});
  CatchUp();
  for (int round = 1; round <= 7; ++round) Advance(std::chrono::seconds(10));
  EXPECT_EQ(ByState(Tasks()), (std::map<std::string, int>{{"failed", 7}, {"running", 1}}));
}

// A removed service keeps no history: its tasks are stopped, then deleted.
// A job's ended tasks stay as long as the job.
TEST_F(LoopTest, ARemovedServiceKeepsNoHistoryAndJobsKeepTheirs) {
  OpenWith(ControlLoopOptions().window);
  AddNodes(1);
  CreateService("web", 3);
  ASSERT_EQ(Call("POST", "/v1/jobs",
                 R"({"id": "j", "requestor": "ci", "tasks": [{"duration": 1}, {"duration": 1}]})")
                .first,
            201);
  CatchUp();
  ASSERT_EQ(Call("DELETE", "/v1/services/web").first, 200);
  Advance(std::chrono::seconds(1));
  Advance(std::chrono::seconds(1));
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{{"j.1", "complete"}, {"j.2", "complete"}}));
}

}  // namespace
}  // namespace berth::daemon

namespace berth::daemon {
namespace {

// The views' counts (GET /v1/snapshot, the "tasks" of GET /v1/services and
// /v1/nodes, the gauges) agree with the tasks themselves after a drain, a
// rolling update, a service that cannot be placed and a job.
TEST_F(LoopTest, TheViewsCountsAgreeWithTheTasks) {
  OpenWith(ControlLoopOptions().window);
  AddNodes(3);
  CreateService("web", 5);
  ASSERT_EQ(Call("POST", "/v1/services",
                 R"({"id": "big", "replicas": 1, "task": {"resources": {"cpu": 8}}})")
                .first,
            201);
  ASSERT_EQ(
      Call("POST", "/v1/jobs",
           R"({"id": "j", "requestor": "ci", "tasks": [{"duration": 300}, {"duration": 300}]})")
          .first,
      201);
  CatchUp();
  ASSERT_EQ(Call("POST", "/v1/nodes/n2/drain").first, 200);
  ASSERT_EQ(Call("PATCH", "/v1/services/web", R"({"task": {"resources": {"cpu": "200m"}}})").first,
            200);
  for (int i = 0; i < 40; ++i) Advance(std::chrono::seconds(1));  // the update finishes

  const auto [status, snapshot] = Call("GET", "/v1/snapshot");
  ASSERT_EQ(status, 200) << snapshot.dump();
  const Json tasks = Call("GET", "/v1/tasks").second["tasks"];
  std::map<std::string, uint64_t> by_state, on_node, running_current, web_on_node;
  std::map<std::string, int64_t> cpu_on_node;
  for (const Json& t : tasks) {
    const std::string state = t["state"], node = t.value("node", "");
    ++by_state[state];
    const bool holds = state == "assigned" || state == "accepted" || state == "preparing" ||
                       state == "starting" || state == "running";
    if (holds && !node.empty()) ++on_node[node];
    if (holds && !node.empty() && t.value("service", "") == "web") {
      cpu_on_node[node] += t.value("spec_version", uint64_t{0}) >= 2 ? 200 : 100;
      ++web_on_node[node];
    }
    if (state == "running" && t.value("desired_state", "running") != "shutdown" &&
        t.value("spec_version", uint64_t{0}) >= 2)
      ++running_current[t.value("service", "")];
  }
  using Counts = std::map<std::string, uint64_t>;
  EXPECT_EQ(snapshot["tasks"].get<Counts>(), by_state);
  ASSERT_EQ(snapshot["nodes"].size(), 3u);
  for (const Json& n : snapshot["nodes"]) {
    EXPECT_EQ(n["used"]["tasks"], on_node[n["id"]]) << n.dump();
    EXPECT_EQ(n["used"]["cpu"], std::to_string(cpu_on_node[n["id"]]) + "m") << n.dump();
    EXPECT_EQ(n.value("services", Json::object()).value("web", uint64_t{0}), web_on_node[n["id"]]);
    EXPECT_EQ(Call("GET", "/v1/nodes/" + n["id"].get<std::string>()).second["tasks"],
              on_node[n["id"]]);
  }
  EXPECT_EQ(on_node["n2"], 0u) << "drained";
  std::map<std::string, Json> services;
  const Json listed = Call("GET", "/v1/services").second;
  for (const Json& s : listed["services"]) services[s["id"].get<std::string>()] = s;
  EXPECT_EQ(services["web"]["tasks"]["running"], running_current["web"]);
  EXPECT_EQ(services["web"]["tasks"]["running"], 5);
  EXPECT_EQ(services["web"]["tasks"]["desired"], 5);
  EXPECT_EQ(services["big"]["tasks"]["pending"], 1);
  EXPECT_TRUE(services["big"]["tasks"]["pending_message"].get<std::string>().starts_with(
      "no suitable node"))
      << services["big"].dump();
  ASSERT_EQ(snapshot["jobs"].size(), 1u);
  EXPECT_EQ(snapshot["jobs"][0]["requestor"], "ci");
  EXPECT_EQ(snapshot["jobs"][0]["states"]["running"], 2);
  EXPECT_EQ(Metric("berth_tasks{state=\"running\"}"), std::to_string(by_state["running"]));
  EXPECT_EQ(Metric("berth_tasks_pending{reason=\"no_suitable_node\"}"), "1");
  EXPECT_EQ(Metric("berth_nodes{state=\"ready\",availability=\"drain\"}"), "1");
  EXPECT_EQ(Metric("berth_nodes{state=\"ready\",availability=\"active\"}"), "2");
}

}  // namespace
}  // namespace berth::daemon
