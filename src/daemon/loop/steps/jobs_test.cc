// Tests of the jobs step (jobs.h): batch jobs: killed, named with services, stored whole, on the
// injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "core/task.h"
#include "daemon/loop/reconciler_test_support.h"
#include "daemon/registry/job_parts.h"

namespace berth::daemon {
namespace {

TEST_F(ReconcilerTest, KilledJobsStopAndTheirWorkersGoToOthers) {
  AddNode("n1", 1);
  ASSERT_TRUE(jobs_.Submit(Job("a", "x", 2, 60)).ok());
  ASSERT_TRUE(jobs_.Submit(Job("b", "x", 1, 60)).ok());
  Settle();
  EXPECT_EQ(Tasks().at("a.1"), "running@n1");
  EXPECT_EQ(Tasks().at("b.1"), "new@");
  ASSERT_TRUE(jobs_.Kill("a").ok());
  Settle();
  EXPECT_EQ(Tasks().at("a.1"), "shutdown@n1");
  EXPECT_EQ(Tasks().at("a.2"), "shutdown@");
  EXPECT_EQ(Tasks().at("b.1"), "running@n1");
  EXPECT_EQ((*WhyTask(store_, "a.2"))["reason"], "job was killed");
}

TEST_F(ReconcilerTest, ServicesAndJobsShareOneNamespace) {
  // Both name their tasks "<name>.<n>"; a service "a" must not take job a's tasks.
  ASSERT_TRUE(jobs_.Submit(Job("a", "x", 1, 1)).ok());
  EXPECT_EQ(services_.Create(Json{{"id", "a"}, {"replicas", 1}}).status().message(),
            "service-or-job 'a' already exists");
  ASSERT_TRUE(services_.Create(Json{{"id", "b"}, {"replicas", 1}}).ok());
  EXPECT_EQ(jobs_.Submit(Job("b", "x", 1, 1)).status().code(), StatusCode::kConflict);
  ASSERT_TRUE(services_.Remove("b").ok());
  EXPECT_TRUE(services_.Create(Json{{"id", "b"}, {"replicas", 1}}).ok());  // the name is free again
}

TEST_F(ReconcilerTest, AJobIsStoredWholeOrNotAtAll) {
  Json job = Job("a", "x", 3, 1);
  job["tasks"][2]["outcome"] = "explode";
  EXPECT_EQ(jobs_.Submit(job).status().message(),
            "tasks[2].outcome: expected complete or fail, got 'explode'");
  EXPECT_EQ(store_.revision(), 0);
  EXPECT_EQ(jobs_.Submit(Json{{"id", "b"}, {"requestor", "x"}, {"tasks", Json::array()}})
                .status()
                .message(),
            "tasks: expected 1 to 100000 tasks");
}

// An executor that runs every task at once and records what it was told:
// each run's id with its command line, and the runs it stopped. A run of a
// task in `failing` fails while that task has failures left; with `endless`
// no run ends.
class RecordingExecutor final : public executor::Executor {
 public:
  std::optional<std::string> Start(const executor::TaskToRun& task, Timestamp) override {
    std::string line = task.id + ":";
    if (task.process != nullptr) {
      line += " " + task.process->command;
      for (const std::string& arg : task.process->args) line += " " + arg;
      for (const std::string& env : task.process->env) line += " " + env;
    }
    starts.push_back(line);
    started_.push_back(task.id);
    if (!endless) changed_.push_back(task.id);  // the next pass checks it, and it ends
    return "running (test)";
  }
  std::optional<executor::Ended> Check(const executor::TaskToRun& task, Timestamp,
                                       std::optional<Timestamp>*) override {
    if (endless) return std::nullopt;
    int& left = failing[std::string(TaskIdOfRun(task.id))];
    if (left > 0) {
      --left;
      return executor::Ended{true, 1000, "exit status 3"};
    }
    return executor::Ended{false, 1000, "exit status 0"};
  }
  void Stop(const executor::TaskToRun& task) override {
    stops.push_back(task.id + " grace " +
                    (task.process ? FormatDuration(task.process->stop_grace_period) : "-"));
  }
  std::vector<std::string> TakeChanged() override { return std::exchange(changed_, {}); }
  // Lets every run end: the next pass checks the runs started so far.
  void EndAll() {
    endless = false;
    changed_ = started_;
  }
  std::vector<std::string> starts, stops;
  std::map<std::string, int> failing;
  bool endless = false;

 private:
  std::vector<std::string> started_, changed_;
};

class JobRunsTest : public ReconcilerTest {
 protected:
  void SettleRuns() {
    for (int i = 0; i < 30; ++i) {
      Result<PassSummary> pass = runner_.RunPass(clock_.Now());
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      if (!pass->wrote) return;
    }
    FAIL() << "no settled state after 30 passes";
  }
  // A node of two workers.
  void AddNode2(const std::string& id) {
    ASSERT_TRUE(nodes_
                    .Register(Json{
                        {"id", id}, {"slots", 2}, {"resources", {{"cpu", 4}, {"memory", "8Gi"}}}})
                    .ok());
  }
  // What was started, in id order.
  std::vector<std::string> Starts() const {
    std::vector<std::string> starts = executor_.starts;
    std::sort(starts.begin(), starts.end());
    return starts;
  }
  Json StoredTaskBody(const std::string& id) {
    return Json::parse((*store_.Get("task", id))->body);
  }
  // A job of `count` tasks running `args` (with {{.Index}}) under sh.
  static Json CommandJob(const std::string& id, const std::string& requestor, int count,
                         Json args) {
    Json job = Job(id, requestor, count, 1);
    job["task"]["command"] = "sh";
    job["task"]["args"] = std::move(args);
    return job;
  }

  RecordingExecutor executor_;
  Reconciler runner_{store_, nullptr, nullptr, {}, &executor_};
};

TEST_F(JobRunsTest, EachTaskRunsItsIndexedCommandAndTheJobEndsComplete) {
  AddNode2("n1");
  Json job = CommandJob("j", "x", 2, {"-c", "echo part {{.Index}}"});
  job["task"]["env"] = {"PART={{ .Index }}"};
  ASSERT_TRUE(jobs_.Submit(job).ok());
  SettleRuns();
  EXPECT_EQ(Starts(), (std::vector<std::string>{"j.1: sh -c echo part 1 PART=1",
                                                "j.2: sh -c echo part 2 PART=2"}));
  for (const char* id : {"j.1", "j.2"}) {
    EXPECT_EQ(StoredTaskBody(id)["state"], "complete");
    EXPECT_EQ(StoredTaskBody(id)["desired_state"], "complete");  // no longer "running"
  }
  const Json got = *jobs_.Get("j");
  EXPECT_EQ(got["state"], "complete");
  EXPECT_EQ(got["states"], (Json{{"complete", 2}}));
  EXPECT_EQ(got["max_retries"], 2);  // the default, stored
}

TEST_F(JobRunsTest, AFailedTaskWaitsAgainUntilItsRetriesAreUsedThenStaysFailed) {
  AddNode2("n1");
  Json job = CommandJob("j", "x", 2, {"-c", "exit {{.Index}}"});
  ASSERT_TRUE(jobs_.Submit(job).ok());
  executor_.failing["j.1"] = 5;  // fails every run
  executor_.failing["j.2"] = 1;  // fails once, then completes
  SettleRuns();
  // Each run has its own id on the node, so a berth-node starts it afresh.
  EXPECT_EQ(Starts(), (std::vector<std::string>{"j.1: sh -c exit 1", "j.1~1: sh -c exit 1",
                                                "j.1~2: sh -c exit 1", "j.2: sh -c exit 2",
                                                "j.2~1: sh -c exit 2"}));
  const Json failed = StoredTaskBody("j.1");
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_EQ(failed["desired_state"], "shutdown");
  EXPECT_EQ(failed["message"], "exit status 3; failed after 2 retries");
  EXPECT_EQ(failed["retries"], 2);
  EXPECT_EQ(StoredTaskBody("j.2")["state"], "complete");
  EXPECT_EQ(StoredTaskBody("j.2")["retries"], 1);
  const Json got = *jobs_.Get("j");
  EXPECT_EQ(got["state"], "failed");  // once every task ended
  EXPECT_EQ(got["states"], (Json{{"complete", 1}, {"failed", 1}}));
}

TEST_F(JobRunsTest, NoRetriesMeansFailedAtOnceAndARetriedTaskRunsAsANewRun) {
  AddNode("n1", 4);
  Json job = CommandJob("j", "x", 1, {"-c", "exit 3"});
  job["max_retries"] = 0;
  ASSERT_TRUE(jobs_.Submit(job).ok());
  executor_.failing["j.1"] = 1;
  SettleRuns();
  EXPECT_EQ(executor_.starts, (std::vector<std::string>{"j.1: sh -c exit 3"}));
  EXPECT_EQ(StoredTaskBody("j.1")["message"], "exit status 3");
  EXPECT_EQ((*jobs_.Get("j"))["state"], "failed");
  // One retry: the message of the waiting task says which.
  job = CommandJob("k", "x", 1, {"-c", "exit 3"});
  job["max_retries"] = 1;
  ASSERT_TRUE(jobs_.Submit(job).ok());
  executor_.failing["k.1"] = 1;
  executor_.endless = true;
  SettleRuns();  // its first run starts
  executor_.EndAll();
  SettleRuns();  // it fails, waits again and its second run completes
  EXPECT_EQ(executor_.starts.back(), "k.1~1: sh -c exit 3");
  EXPECT_EQ(StoredTaskBody("k.1")["retries"], 1);
  EXPECT_EQ(StoredTaskBody("k.1")["attempt"], 1);
  EXPECT_EQ((*jobs_.Get("k"))["state"], "complete");
}

TEST_F(JobRunsTest, ASubmissionWhoseArgumentsDoNotExpandIsRefused) {
  EXPECT_EQ(jobs_.Submit(CommandJob("j", "x", 2, {"-c", "echo {{.Slot}}"})).status().message(),
            "task.args[1]: unknown template '{{.Slot}}' (only {{.Index}} expands)");
  Json env = CommandJob("j", "x", 1, {"-c", "true"});
  env["task"]["env"] = {"A={{.Index"};
  EXPECT_EQ(jobs_.Submit(env).status().message(),
            "task.env[0]: '{{' is not closed by '}}' (only {{.Index}} expands)");
  Json retries = CommandJob("j", "x", 1, {"-c", "true"});
  retries["max_retries"] = -1;
  EXPECT_EQ(jobs_.Submit(retries).status().message(),
            "max_retries: expected an integer from 0 to 100, got -1");
  Json none = CommandJob("j", "x", 1, {"-c", "true"});
  none["tasks"] = Json::array();
  EXPECT_EQ(jobs_.Submit(none).status().message(), "tasks: expected 1 to 100000 tasks");
  Json over = CommandJob("j", "x", 1, {"-c", "true"});
  over["tasks"] = Json::array();
  for (int i = 0; i < 100'001; ++i) over["tasks"].push_back(Json::object());
  EXPECT_EQ(jobs_.Submit(over).status().message(), "tasks: expected 1 to 100000 tasks");
  EXPECT_EQ(store_.revision(), 0);
}

// A job of different commands: task i runs its line of "commands", with
// what the template gives every task (env, where {{.Index}} still expands);
// the lines themselves are taken as written.
TEST_F(JobRunsTest, EachTaskRunsItsOwnCommandLineWithTheTemplatesSharedFields) {
  AddNode2("n1");
  Json job = Job("j", "x", 3, 1);
  job["task"]["env"] = {"PART={{.Index}}"};
  job["commands"] = Json::parse(R"([["make", "lib"], ["sh", "-c", "echo {{.Index}}"], ["true"]])");
  ASSERT_TRUE(jobs_.Submit(job).ok());
  // Stored with the tasks' entries (job_parts.h), shown with the job.
  EXPECT_EQ((*jobs_.Get("j"))["commands"], job["commands"]);
  EXPECT_FALSE(Json::parse((*store_.Get("job", "j"))->body).contains("commands"));
  executor_.failing["j.3"] = 1;  // a retried run takes its own line again
  SettleRuns();
  EXPECT_EQ(Starts(),
            (std::vector<std::string>{"j.1: make lib PART=1", "j.2: sh -c echo {{.Index}} PART=2",
                                      "j.3: true PART=3", "j.3~1: true PART=3"}));
  EXPECT_EQ((*jobs_.Get("j"))["state"], "complete");
}

// The template's limits still reach the placement engine's limits filter,
// though the placement part is decoded without the process fields.
TEST_F(JobRunsTest, PerTaskCommandsKeepTheTemplatesLimitsForPlacement) {
  ASSERT_TRUE(nodes_
                  .Register(Json{{"id", "n1"},
                                 {"limits_enforced", false},
                                 {"resources", {{"cpu", 4}, {"memory", "8Gi"}}}})
                  .ok());
  Json limited = Job("l", "x", 1, 1);
  limited["task"]["limits"] = {{"memory", "64Mi"}};
  limited["commands"] = Json::parse(R"([["true"]])");
  ASSERT_TRUE(jobs_.Submit(limited).ok());
  SettleRuns();
  EXPECT_NE((*WhyTask(store_, "l.1"))["reason"].dump().find("limits not enforceable"),
            std::string::npos)
      << *WhyTask(store_, "l.1");
}

TEST_F(JobRunsTest, BadPerTaskCommandsAreRefusedAndChangeNothing) {
  auto refusal = [&](const Json& commands, const Json& task = Json::object()) {
    Json job = Job("j", "x", 2, 1);
    job["task"].update(task);
    job["commands"] = commands;
    return jobs_.Submit(job).status().message();
  };
  EXPECT_EQ(refusal(Json::parse(R"([["true"]])")),
            "commands: expected one command line per task (2), got 1");
  EXPECT_EQ(refusal(Json::parse(R"([["true"], []])")),
            "commands[1]: must not be empty (the program, then its arguments)");
  EXPECT_EQ(refusal(Json::parse(R"([["true"], [""]])")), "commands[1][0]: must not be empty");
  EXPECT_EQ(refusal(Json::parse(R"("true")")), "commands: expected a list, got string");
  EXPECT_EQ(refusal(Json::parse(R"([["a"], ["b"]])"), Json{{"command", "sh"}}),
            "task.command: not with \"commands\" (each task's program and arguments are its "
            "entry of \"commands\")");
  EXPECT_EQ(refusal(Json::parse(R"([["a"], ["b"]])"), Json{{"env", {"A={{.Slot}}"}}}),
            "task.env[0]: unknown template '{{.Slot}}' (only {{.Index}} expands)");
  EXPECT_EQ(store_.revision(), 0);
}

// Fair-share rebalancing takes a loaned worker back: the task's process is
// stopped with its stop grace, and the task waits again to start later as a
// new run.
TEST_F(JobRunsTest, ARebalanceStopsTheRunOfALoanedWorkerAndTheTaskWaitsAgain) {
  AddNode2("n1");
  ASSERT_TRUE(classes_
                  .Update(Json{{"classes", {{"a", 50}, {"b", 50}}},
                               {"requestors",
                                Json::array({Json::array({"^a", "a"}), Json::array({"^b", "b"})})},
                               {"rebalance", {{"threshold", 10}, {"min_duration_s", 60}}}})
                  .ok());
  executor_.endless = true;
  Json a = CommandJob("a", "a-ci", 2, {"-c", "sleep 600"});
  a["task"]["stop_grace_period"] = "3s";
  ASSERT_TRUE(jobs_.Submit(a).ok());
  SettleRuns();  // a borrows b's idle worker
  ASSERT_TRUE(jobs_.Submit(CommandJob("b", "b-ci", 1, {"-c", "sleep 600"})).ok());
  SettleRuns();  // the spread is over the threshold: the timer starts
  EXPECT_TRUE(executor_.stops.empty());
  clock_.Advance(std::chrono::seconds(61));
  SettleRuns();  // the timer fires: one of a's tasks gives its worker to b
  ASSERT_EQ(executor_.stops.size(), 1u);
  const std::string stopped(TaskIdOfRun(executor_.stops[0].substr(0, 3)));
  EXPECT_EQ(executor_.stops[0], stopped + " grace 3s");
  const Json waiting = StoredTaskBody(stopped);
  EXPECT_EQ(waiting["state"], "new");
  EXPECT_EQ(waiting["message"], "preempted by rebalance; waiting again");
  EXPECT_EQ(waiting["attempt"], 1);
  EXPECT_FALSE(waiting.contains("node"));
  EXPECT_EQ(StoredTaskBody("b.1")["state"], "running");
  // b ends: the preempted task starts again, as a new run on the node.
  executor_.EndAll();
  SettleRuns();
  EXPECT_EQ(StoredTaskBody(stopped)["state"], "complete");
  EXPECT_NE(
      std::find(executor_.starts.begin(), executor_.starts.end(), stopped + "~1: sh -c sleep 600"),
      executor_.starts.end());
  EXPECT_EQ((*jobs_.Get("a"))["state"], "complete");
}

// etcd hands out a transaction's writes in key order, so a job that fits
// one commit comes to the loop before its parts ("job" < "job_tasks"):
// its tasks are made all the same.
TEST_F(JobRunsTest, AJobWhosePartsComeAfterItInOneCommitRuns) {
  AddNode2("n1");
  SettleRuns();  // the loop has read the store: the job comes as a change
  const Json tasks = Json::array({Json::object(), Json::object()});
  const Json commands = Json::parse(R"([["make", "a"], ["make", "b"]])");
  std::vector<store::Write> writes = {store::Write::Create("job", "j",
                                                           Json{{"id", "j"},
                                                                {"requestor", "x"},
                                                                {"tasks", 2},
                                                                {"max_retries", 0},
                                                                {"submission", "s1"},
                                                                {"per_task_commands", true}}
                                                               .dump())};
  for (store::Write& part : EncodeParts("j", "s1", tasks, &commands)) writes.push_back(part);
  ASSERT_TRUE(store_.Commit(writes).ok());
  SettleRuns();
  EXPECT_EQ(Starts(), (std::vector<std::string>{"j.1: make a", "j.2: make b"}));
  EXPECT_EQ((*jobs_.Get("j"))["state"], "complete");
}

// berthd on a store that, as etcd, takes only so much in one commit (128
// writes, here 256 KiB): a job too large for one is stored in parts, then
// its record (job_parts.h).
class LargeJobTest : public testing::Test {
 protected:
  // A job of `count` tasks, each named and with its own command line.
  static Json NamedJob(const std::string& id, int count) {
    Json job = Job(id, "x", count, 1);
    job["commands"] = Json::array();
    for (int i = 1; i <= count; ++i) {
      job["tasks"][i - 1]["name"] = "shard-" + std::to_string(i);
      job["commands"].push_back({"run-shard", std::to_string(i), "--verbose"});
    }
    return job;
  }
  size_t Parts() { return store_.ListPrefix(kJobTasksKind, "j/")->size(); }
  void SettleRuns() {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = runner_.RunPass(clock_.Now());
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      if (!pass->wrote) return;
    }
    FAIL() << "no settled state after 10 passes";
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::WatchedStore store_{
      std::make_unique<store::MemoryStore>(store::Store::BatchLimits{128, 256 << 10})};
  NodeRegistry nodes_{store_};
  JobRegistry jobs_{store_, clock_};
  RecordingExecutor executor_;
  Reconciler runner_{store_, nullptr, nullptr, {}, &executor_};
};

TEST_F(LargeJobTest, AJobOfManyCommitsIsWholeRunsItsLinesAndAKillWritesOnlyWhatStarted) {
  const Json job = NamedJob("j", 6'000);
  ASSERT_GT(job.dump().size(), size_t{256} << 10);  // more than one commit takes
  Result<Json> submitted = jobs_.Submit(job);
  ASSERT_TRUE(submitted.ok()) << submitted.status().message();
  EXPECT_GT((*submitted)["revision"], 2);  // the parts' commits, then the record's
  EXPECT_GT(Parts(), 1u);
  EXPECT_TRUE(store_.List("task")->empty());  // no task has a record yet
  EXPECT_EQ((*jobs_.Get("j"))["states"], (Json{{"new", 6'000}}));
  TaskFilter of_job;
  of_job.job = "j";
  const Json listed = (*ListTasks(store_, of_job))["tasks"];
  ASSERT_EQ(listed.size(), 6'000u);
  EXPECT_EQ(listed[0]["id"], "j.1");  // in id order, as stored records are
  EXPECT_EQ(listed[1]["id"], "j.10");
  const Json last = *GetTask(store_, "j.6000");
  EXPECT_EQ(last["name"], "shard-6000");
  EXPECT_EQ(last["message"], "waiting for admission");
  EXPECT_EQ(GetTask(store_, "j.6001").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(GetTask(store_, "j.05").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*jobs_.Get("j"))["commands"], job["commands"]);

  ASSERT_TRUE(nodes_
                  .Register(Json{
                      {"id", "n1"}, {"slots", 2}, {"resources", {{"cpu", 4}, {"memory", "8Gi"}}}})
                  .ok());
  executor_.endless = true;
  SettleRuns();
  EXPECT_EQ(executor_.starts,
            (std::vector<std::string>{"j.1: run-shard 1 --verbose", "j.2: run-shard 2 --verbose"}));
  EXPECT_EQ(store_.List("task")->size(), 2u);  // the admitted ones, created as they start
  EXPECT_EQ((*jobs_.Get("j"))["states"], (Json{{"new", 5'998}, {"running", 2}}));

  ASSERT_TRUE(jobs_.Kill("j").ok());
  SettleRuns();
  EXPECT_EQ(executor_.stops.size(), 2u);
  EXPECT_EQ(store_.List("task")->size(), 2u);  // the others never had a record
  EXPECT_EQ((*jobs_.Get("j"))["states"], (Json{{"shutdown", 6'000}}));
  EXPECT_EQ((*WhyTask(store_, "j.777"))["reason"], "job was killed");
}

TEST_F(LargeJobTest, ARefusedSubmissionLeavesNoParts) {
  ASSERT_TRUE(jobs_.Submit(NamedJob("j", 6'000)).ok());
  const size_t parts = Parts();
  const int64_t revision = store_.revision();
  // The same name again: its parts are written, then the record is refused.
  EXPECT_EQ(jobs_.Submit(NamedJob("j", 6'000)).status().message(), "job 'j' already exists");
  EXPECT_EQ(Parts(), parts);
  EXPECT_GT(store_.revision(), revision);  // it wrote, then took back
  EXPECT_EQ((*jobs_.Get("j"))["states"], (Json{{"new", 6'000}}));
}

}  // namespace
}  // namespace berth::daemon
