// `berth service create` against a berthd: the template its flags make,
// the command after `--`, and its wait.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, DockerStyleFlagsBecomeTheServiceTemplate) {
  ASSERT_EQ(Run({"node", "add", "n1", "--cpu", "4", "--memory", "8Gi", "--label", "az=a"}).status,
            0);
  Outcome created =
      Run({"service", "create", "web", "--replicas", "2", "--constraint", "node.labels.az==a",
           "--placement-pref", "spread=node.labels.az", "--reserve-cpu", "0.5", "--reserve-memory",
           "256Mi", "--publish", "mode=host,target=80,published=8080"});
  ASSERT_EQ(created.status, 0) << created.err;
  Outcome inspect = Run({"service", "inspect", "web", "-o", "json"});
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  const Json task = Json::parse(inspect.out)["task"];
  EXPECT_EQ(task["constraints"], Json::array({"node.labels.az==a"}));
  EXPECT_EQ(task["preferences"], Json::parse(R"([{"spread": "node.labels.az"}])"));
  EXPECT_EQ(task["resources"], (Json{{"cpu", "0.5"}, {"memory", "256Mi"}}));
  EXPECT_EQ(task["ports"][0]["published"], 8080);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome tasks = Run({"task", "ls", "--service", "web"});
  const std::string id1 = Json::parse(Run({"task", "inspect", "web.1", "-o", "json"}).out)["id"];
  EXPECT_NE(tasks.out.find("web.1  " + id1 + "  1        n1    running  running"),
            std::string::npos)
      << tasks.out;
  Outcome why = Run({"task", "why", "web.2"});  // one host port 8080 on one node
  const std::string id2 = Json::parse(Run({"task", "inspect", "web.2", "-o", "json"}).out)["id"];
  EXPECT_EQ(why.out, "web.2 (" + id2 +
                         ") is pending: no suitable node (host-mode port already in use on 1 "
                         "node)\n");
}

// `--constraint X -- sh -c 'echo hi'` was refused ("The following argument
// was not expected: -c"): CLI11 gave the words after `--` to the last
// repeatable option.
TEST_F(ClientCommandsTest, EverythingAfterDoubleDashIsTheTasksCommand) {
  Outcome created = Run({"service", "create", "hello", "-d", "--constraint", "node.hostname==n1",
                         "--", "sh", "-c", "echo hi"});
  ASSERT_EQ(created.status, 0) << created.err;
  Json task = ApiGet("/v1/services/hello")["task"];
  EXPECT_EQ(task["command"], "sh");
  EXPECT_EQ(task["args"], Json::array({"-c", "echo hi"}));
  EXPECT_EQ(task["constraints"], Json::array({"node.hostname==n1"}));
  // After -e and --publish too; a second `--` and flag-like words are the command's.
  created = Run({"service", "create", "env", "-d", "-e", "A=1", "--publish",
                 "mode=host,target=80,published=8080", "--", "ls", "-l", "--", "-e", "--help"});
  ASSERT_EQ(created.status, 0) << created.err;
  task = ApiGet("/v1/services/env")["task"];
  EXPECT_EQ(task["command"], "ls");
  EXPECT_EQ(task["args"], Json::array({"-l", "--", "-e", "--help"}));
  EXPECT_EQ(task["env"], Json::array({"A=1"}));
  // Words before `--` start the command, as before.
  created = Run({"service", "create", "sleepy", "-d", "sleep", "--", "-1"});
  ASSERT_EQ(created.status, 0) << created.err;
  task = ApiGet("/v1/services/sleepy")["task"];
  EXPECT_EQ(task["command"], "sleep");
  EXPECT_EQ(task["args"], Json::array({"-1"}));
}

// A task that failed at once still gave "verify: service converged" and
// exit 0: the wait now watches the tasks for the monitor period.
TEST_F(ClientCommandsTest, CreateReportsATaskThatFails) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  Outcome created =
      Run({"service", "create", "bad", "--run-duration", "0.2", "--run-outcome", "fail"});
  EXPECT_EQ(created.status, 1) << created.out;
  EXPECT_EQ(created.out.find("verify: service converged"), std::string::npos) << created.out;
  EXPECT_NE(created.err.find("berth: bad: task bad.1 (bad.1."), std::string::npos) << created.err;
  EXPECT_NE(created.err.find(") failed: failed after "), std::string::npos) << created.err;
}

TEST_F(ClientCommandsTest, CreateWaitsForTheMonitorPeriodUnlessDetached) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  Outcome created = Run({"service", "create", "web", "--monitor", "300ms"});
  ASSERT_EQ(created.status, 0) << created.err;
  EXPECT_NE(created.out.find("overall progress: 1 out of 1 tasks running\n"
                             "verify: waiting 300ms to verify that the tasks keep running\n"),
            std::string::npos)
      << created.out;
  EXPECT_TRUE(created.out.ends_with("verify: service converged\n")) << created.out;
  Outcome detached = Run({"service", "create", "api", "-d"});
  ASSERT_EQ(detached.status, 0) << detached.err;
  EXPECT_EQ(detached.out, "api\n");
  Outcome bad = Run({"service", "create", "x", "--monitor", "soon"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--monitor"), std::string::npos) << bad.err;
}

// `--replicas -5` exited 0 and made one replica: -1 stood for "not given".
TEST_F(ClientCommandsTest, NegativeReplicasAreRefusedAndChangeNothing) {
  Outcome created = Run({"service", "create", "neg", "-d", "--replicas", "-5"});
  EXPECT_EQ(created.status, 2) << created.out;
  EXPECT_NE(created.err.find("--replicas"), std::string::npos) << created.err;
  EXPECT_TRUE(ApiGet("/v1/services")["services"].empty()) << "no service was made";
  ASSERT_EQ(Run({"service", "create", "neg", "-d", "--replicas", "2"}).status, 0);
  Outcome updated = Run({"service", "update", "neg", "-d", "--replicas", "-1"});
  EXPECT_EQ(updated.status, 2) << updated.out;
  EXPECT_EQ(ApiGet("/v1/services/neg")["replicas"], 2) << "nothing changed by the refused update";
}

}  // namespace
}  // namespace berth::cli
