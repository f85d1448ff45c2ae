// `berth job` and `berth class` against a berthd: jobs admitted by the
// classes set from the command line.
#include <fstream>

#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, JobsAreAdmittedByTheClassesSetFromTheCommandLine) {
  for (const char* node : {"n1", "n2"})
    ASSERT_EQ(Run({"node", "add", node, "--cpu", "4"}).status, 0);
  Outcome set = Run({"class", "set", "--percents", "land=50,diff=50", "--requestor", "^land=land",
                     "--requestor", "^diff=diff"});
  ASSERT_EQ(set.status, 0) << set.err;
  ASSERT_EQ(
      Run({"job", "submit", "a", "--requestor", "land-ci", "--tasks", "3", "--duration", "600"})
          .status,
      0);
  ASSERT_EQ(
      Run({"job", "submit", "b", "--requestor", "diff-ci", "--tasks", "3", "--duration", "600"})
          .status,
      0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  // Two workers (one slot per node), split evenly between the classes.
  Outcome a = Run({"job", "inspect", "a", "-o", "json"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(Json::parse(a.out)["states"], (Json{{"new", 2}, {"running", 1}}));
  Outcome killed = Run({"job", "kill", "b"});
  EXPECT_EQ(killed.status, 0) << killed.err;
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  EXPECT_EQ(Json::parse(Run({"job", "inspect", "a", "-o", "json"}).out)["states"],
            (Json{{"new", 1}, {"running", 2}}));  // b's worker went to a
  Outcome bad = Run({"class", "set", "--percents", "x=-1"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "berth: classes: class 'x' has a negative load percent (-1)\n");
  EXPECT_NE(Run({"class", "get"}).out.find("land   50"), std::string::npos);
}

// `class ls` is `class get`; both show what the last admission pass found
// per class, and say when a class's percent rounds down to no worker.
TEST_F(ClientCommandsTest, ClassLsShowsEntitlementsAndAClassEntitledToNone) {
  for (const char* node : {"n1", "n2", "n3"})
    ASSERT_EQ(Run({"node", "add", node, "--cpu", "4"}).status, 0);
  Outcome before = Run({"class", "ls"});
  ASSERT_EQ(before.status, 0) << before.err;
  EXPECT_NE(before.out.find("workers: no admission pass yet"), std::string::npos) << before.out;
  ASSERT_EQ(Run({"class", "set", "--percents", "big=75,small=25", "--requestor", "^s=small",
                 "--requestor", ".=big"})
                .status,
            0);
  ASSERT_EQ(Run({"job", "submit", "a", "--requestor", "b-ci", "--tasks", "5", "--duration", "600"})
                .status,
            0);
  ASSERT_EQ(Run({"job", "submit", "b", "--requestor", "s-ci", "--tasks", "2", "--duration", "600"})
                .status,
            0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome listed = Run({"class", "ls"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_EQ(listed.out, Run({"class", "get"}).out);
  EXPECT_NE(listed.out.find("CLASS  LOAD %  ENTITLED  RUNNING  WAITING\n"), std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("big    75      3         3        2\n"), std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("small  25      0         0        2\n"), std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("workers: 3 (0 idle)\nclass 'small' is entitled to 0 of 3 workers "
                            "(25% rounds down): it runs only on workers the other classes leave "
                            "idle\n"),
            std::string::npos)
      << listed.out;
}

// `job inspect` shows each task and why it failed; `task ls --job` lists
// only that job's tasks.
TEST_F(ClientCommandsTest, JobInspectShowsEachTaskAndWhyItFailed) {
  ASSERT_EQ(Run({"node", "add", "n1", "--cpu", "4"}).status, 0);
  ASSERT_EQ(Run({"job", "submit", "bad", "--requestor", "r", "--tasks", "2", "--duration", "0",
                 "--outcome", "fail", "--max-retries", "1"})
                .status,
            0);
  ASSERT_EQ(Run({"job", "submit", "other", "--requestor", "r", "--duration", "0"}).status, 0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome inspected = Run({"job", "inspect", "bad"});
  ASSERT_EQ(inspected.status, 0) << inspected.err;
  for (const char* line :
       {"ID:           bad\n", "Requestor:    r\n", "State:        failed\n",
        "Tasks:        2 (failed=2)\n", "Max retries:  1\n", "Command:      none (simulated)\n",
        "TASK   NODE  STATE   ATTEMPT  RETRIES  MESSAGE\n"})
    EXPECT_NE(inspected.out.find(line), std::string::npos) << line << inspected.out;
  for (const char* task : {"bad.1", "bad.2"})
    EXPECT_NE(inspected.out.find(std::string(task) + "  n1    failed  2        1        "),
              std::string::npos)
        << task << "\n"
        << inspected.out;
  EXPECT_NE(inspected.out.find("; failed after 1 retry\n"), std::string::npos) << inspected.out;
  EXPECT_EQ(Run({"job", "inspect", "nope"}).status, 1);
  Outcome listed = Run({"task", "ls", "--job", "bad"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_NE(listed.out.find("bad.1"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("bad.2"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("other"), std::string::npos) << listed.out;
}

TEST_F(ClientCommandsTest, JobSubmitTakesTheTemplateFlags) {
  Outcome bad = Run({"job", "submit", "j", "--requestor", "r", "--duration", "soon"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "berth: --duration 'soon': expected seconds\n");
  Outcome submitted = Run({"job", "submit", "j", "--requestor", "r", "--tasks", "2",
                           "--reserve-cpu", "0.5", "--constraint", "node.labels.az==a"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(submitted.out.substr(0, submitted.out.find('\n')),
            "ID  REQUESTOR  TASKS  STATE   TASK STATES");
  const Json job = ApiGet("/v1/jobs/j");
  EXPECT_EQ(job["task"], Json::parse(R"({"resources": {"cpu": "0.5"},
                                         "constraints": ["node.labels.az==a"]})"));
}

TEST_F(ClientCommandsTest, JobSubmitTakesACommandWithPerTaskArguments) {
  Outcome submitted =
      Run({"job", "submit", "j", "--requestor", "r", "--tasks", "2", "--max-retries", "1", "-e",
           "PART={{.Index}}", "--stop-grace-period", "2s", "--", "sh", "-c", "echo {{.Index}}"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const Json job = ApiGet("/v1/jobs/j");
  EXPECT_EQ(job["task"], Json::parse(R"({"command": "sh", "args": ["-c", "echo {{.Index}}"],
                                         "env": ["PART={{.Index}}"], "stop_grace_period": "2s"})"));
  EXPECT_EQ(job["max_retries"], 1);
  EXPECT_EQ(job["tasks"], 2);
}

TEST_F(ClientCommandsTest, JobSubmitRefusesABadTemplateAndATaskCountOutOfRange) {
  Outcome bad = Run({"job", "submit", "j", "--requestor", "r", "--", "echo", "{{.Task.Slot}}"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err,
            "berth: task.args[0]: unknown template '{{.Task.Slot}}' (only {{.Index}} expands)\n");
  for (const char* count : {"0", "100001"}) {
    Outcome out_of_range = Run({"job", "submit", "j", "--requestor", "r", "--tasks", count});
    EXPECT_EQ(out_of_range.status, 2);
    EXPECT_EQ(out_of_range.err,
              "berth: --tasks " + std::string(count) + ": a job has 1 to 100000 tasks\n");
  }
  EXPECT_EQ(Run({"job", "submit", "j", "--requestor", "r", "--max-retries", "101"}).err,
            "berth: max_retries: expected an integer from 0 to 100, got 101\n");
  EXPECT_EQ(ApiGet("/v1/jobs")["jobs"], Json::array());
}

// `berth job submit` with standard input holding `stdin_text`.
Outcome SubmitWithInput(const std::vector<std::string>& connection, std::vector<std::string> args,
                        const std::string& stdin_text) {
  args.insert(args.begin(), {"job", "submit"});
  args.insert(std::find(args.begin(), args.end(), "--"), connection.begin(), connection.end());
  return Berth(args, stdin_text);
}

TEST_F(ClientCommandsTest, JobSubmitTakesOneCommandLinePerTaskFromAFile) {
  const std::string file = dir_.path() + "/commands";
  std::ofstream(file) << "# the build\nmake -C lib\n\nsh -c 'echo \"a b\"; exit 3'\n";
  Outcome submitted = Run(
      {"job", "submit", "j", "--requestor", "r", "--commands-file", file, "-e", "PART={{.Index}}"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  const Json job = ApiGet("/v1/jobs/j");
  EXPECT_EQ(job["commands"], Json::parse(R"([["make", "-C", "lib"],
                                             ["sh", "-c", "echo \"a b\"; exit 3"]])"));
  EXPECT_EQ(job["tasks"], 2);
  EXPECT_EQ(job["task"], Json::parse(R"({"env": ["PART={{.Index}}"]})"));
  // "-" reads standard input; a --tasks that agrees is taken.
  Outcome piped = SubmitWithInput(
      connection_, {"k", "--requestor", "r", "--tasks", "1", "--commands-file", "-"}, "true\n");
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_EQ(ApiGet("/v1/jobs/k")["commands"], Json::parse(R"([["true"]])"));
}

TEST_F(ClientCommandsTest, JobSubmitRefusesABadCommandsFileAndSendsNothing) {
  auto refusal = [&](const std::string& text, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"j", "--requestor", "r", "--commands-file", "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Outcome out = SubmitWithInput(connection_, args, text);
    EXPECT_EQ(out.status, 2) << out.err;
    return out.err;
  };
  EXPECT_EQ(refusal(""),
            "berth: <stdin>: no command lines (the file is empty or holds only blank lines and "
            "comments)\n");
  EXPECT_EQ(refusal("# nothing\n\n"),
            "berth: <stdin>: no command lines (the file is empty or holds only blank lines and "
            "comments)\n");
  EXPECT_EQ(refusal("true\necho 'unclosed\n"),
            "berth: <stdin>: line 2: unterminated single quote (')\n");
  EXPECT_EQ(refusal("true\ntrue\n", {"--tasks", "3"}),
            "berth: --tasks 3: <stdin> has 2 command lines (one per task)\n");
  EXPECT_EQ(refusal("true\n", {"--", "echo", "hi"}),
            "berth: --commands-file: not with a command after -- (each line of the file is a "
            "task's command)\n");
  std::string many;
  for (int i = 0; i <= 100'000; ++i) many += "true\n";
  EXPECT_EQ(refusal(many),
            "berth: <stdin>: 100001 command lines, but a job has 1 to 100000 tasks\n");
  Outcome missing =
      Run({"job", "submit", "j", "--requestor", "r", "--commands-file", dir_.path() + "/none"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, "berth: --commands-file: cannot read '" + dir_.path() +
                             "/none': No such file or directory\n");
  EXPECT_EQ(ApiGet("/v1/jobs")["jobs"], Json::array());
}

TEST_F(ClientCommandsTest, JobLsShowsEachJobsStateAndProgress) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"job", "submit", "ok", "--requestor", "r", "--duration", "0"}).status, 0);
  ASSERT_EQ(Run({"job", "submit", "bad", "--requestor", "r", "--duration", "0", "--outcome", "fail",
                 "--max-retries", "0"})
                .status,
            0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome listed = Run({"job", "ls"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  EXPECT_EQ(listed.out,
            "ID   REQUESTOR  TASKS  STATE     TASK STATES\n"
            "ok   r          1      complete  complete=1\n"
            "bad  r          1      failed    failed=1\n");
  EXPECT_EQ(ApiGet("/v1/tasks/ok.1")["desired_state"], "complete");
  EXPECT_EQ(ApiGet("/v1/tasks/bad.1")["desired_state"], "shutdown");
}

TEST_F(ClientCommandsTest, JobLogsNeedATaskThatWasPlaced) {
  ASSERT_EQ(Run({"job", "submit", "j", "--requestor", "r", "--", "echo", "hi"}).status, 0);
  Outcome none = Run({"job", "logs", "j"});
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err, "berth: job j has no task placed on a node\n");
  EXPECT_EQ(Run({"job", "logs", "nothing"}).err, "berth: no job 'nothing'\n");
  Outcome task = Run({"job", "logs", "j.1"});
  EXPECT_EQ(task.status, 1);
  EXPECT_EQ(task.err, "berth: task 'j.1' has not been placed: no logs yet\n");
}

}  // namespace
}  // namespace berth::cli
