// The service lifecycle through the `berth` binary against a berthd
// process, as the README's sequence types it: `service create` waits and
// prints its progress (standard output is a pipe here, so lines, not a
// live display), then `task why`, `service ps`, `node ps`, `service
// update` and `service ls`; and, with a berth-node, services whose tasks
// are real processes that fail. Every process is started here and stopped
// by its pid (a node's tasks by the pids its data directory records).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "process.h"
#include "store/test_dir.h"

namespace berth {
namespace {

using testing_support::PortInLine;
using testing_support::Process;

class ServiceCli : public testing::Test {
 protected:
  void SetUp() override {
    berthd_ = std::make_unique<Process>(
        std::vector<std::string>{BERTHD_BINARY, "--data-dir", dir_.path() + "/d", "--port", "0"});
    port_ = PortInLine(berthd_->WaitForLine("listening on", std::chrono::seconds(30)));
    ASSERT_FALSE(port_.empty());
  }
  void TearDown() override { berthd_->Kill(SIGTERM); }
  // Runs `berth ARGS --server ... --data-dir ...` (the connection options
  // before a `--`, whose words are the task's command); its exit status
  // and output.
  Process::Exit Berth(std::vector<std::string> args) {
    args.insert(args.begin(), BERTH_BINARY);
    args.insert(std::find(args.begin(), args.end(), "--"),
                {"--server", "127.0.0.1:" + port_, "--data-dir", dir_.path() + "/d"});
    Process berth(args, Process::Stderr::kMerge);
    Process::Exit exit = berth.WaitExit(std::chrono::seconds(60));
    EXPECT_TRUE(WIFEXITED(exit.status)) << exit.output;
    exit.status = WEXITSTATUS(exit.status);
    return exit;
  }

  store::TestDir dir_;
  std::unique_ptr<Process> berthd_;
  std::string port_;
};

TEST_F(ServiceCli, CreateWaitsShowsProgressAndTheReadmeSequenceWorks) {
  for (const char* node : {"n1", "n2"})
    ASSERT_EQ(Berth({"node", "add", node, "--cpu", "1"}).status, 0);
  // Four replicas of 0.5 CPU on two 1-CPU nodes; as the README types it.
  Process::Exit created =
      Berth({"service", "create", "web", "--replicas", "4", "--reserve-cpu", "0.5"});
  ASSERT_EQ(created.status, 0) << created.output;
  EXPECT_NE(created.output.find("overall progress: 4 out of 4 tasks running"), std::string::npos)
      << created.output;
  EXPECT_NE(created.output.find("verify: service converged"), std::string::npos);
  Process::Exit why = Berth({"task", "why", "web.4"});
  ASSERT_EQ(why.status, 0) << why.output;
  EXPECT_EQ(why.output.substr(0, why.output.find(" (")), "web.4") << why.output;
  EXPECT_NE(why.output.find("is running on n"), std::string::npos) << why.output;

  // A fifth replica has no room: create's sibling, update, says so and stops waiting.
  Process::Exit scaled = Berth({"service", "update", "web", "--replicas", "5"});
  ASSERT_EQ(scaled.status, 0) << scaled.output;
  EXPECT_NE(scaled.output.find("web.5  pending  no suitable node (insufficient resources on 2 "
                               "nodes)"),
            std::string::npos)
      << scaled.output;
  EXPECT_NE(scaled.output.find("not converged: 1 task(s) wait for a change"), std::string::npos);
  Process::Exit ls = Berth({"service", "ls"});
  EXPECT_NE(ls.output.find("web  replicated  4/5"), std::string::npos) << ls.output;

  // Draining n1 moves its tasks; service ps shows each slot's history under it.
  ASSERT_EQ(Berth({"node", "update", "n2", "--availability", "drain"}).status, 0);
  ASSERT_EQ(Berth({"service", "update", "web", "--replicas", "2"}).status, 0);
  Process::Exit ps = Berth({"service", "ps", "web"});
  ASSERT_EQ(ps.status, 0) << ps.output;
  EXPECT_EQ(ps.output.substr(0, ps.output.find('\n')),
            "NAME       ID       VERSION  NODE  DESIRED   STATE     MESSAGE")
      << ps.output;
  EXPECT_NE(ps.output.find(" \\_ web.2  web.2."), std::string::npos) << ps.output;
  EXPECT_NE(ps.output.find("node 'n2' was drained"), std::string::npos) << ps.output;
  Process::Exit running = Berth({"service", "ps", "web", "--filter", "desired-state=running"});
  EXPECT_EQ(std::count(running.output.begin(), running.output.end(), '\n'), 3) << running.output;
  Process::Exit on_n1 = Berth({"node", "ps", "n1", "--filter", "desired-state=running"});
  EXPECT_EQ(std::count(on_n1.output.begin(), on_n1.output.end(), '\n'), 3) << on_n1.output;
  Process::Exit on_n2 = Berth({"task", "ls", "--node", "n2", "--desired-state", "running"});
  EXPECT_EQ(std::count(on_n2.output.begin(), on_n2.output.end(), '\n'), 1) << on_n2.output;

  // Conveniences: scale and rm take several services; --label-add / --label-rm.
  ASSERT_EQ(Berth({"service", "create", "api", "--detach"}).status, 0);
  Process::Exit scale = Berth({"service", "scale", "web=1", "api=2"});
  EXPECT_EQ(scale.output, "web scaled to 1\napi scaled to 2\n");
  // A rolling update of api's two tasks, one at a time, then back.
  Process::Exit updated = Berth({"service", "update", "api", "--reserve-cpu", "0.25",
                                 "--update-parallelism", "1", "--update-monitor", "0s"});
  ASSERT_EQ(updated.status, 0) << updated.output;
  EXPECT_NE(updated.output.find("verify: service converged"), std::string::npos) << updated.output;
  Process::Exit inspect = Berth({"service", "inspect", "api", "-o", "json"});
  EXPECT_NE(inspect.output.find("\"state\": \"completed\""), std::string::npos) << inspect.output;
  Process::Exit back = Berth({"service", "rollback", "api", "--rollback-monitor", "0s"});
  EXPECT_EQ(back.status, 2) << "rollback takes no --rollback-* flags: " << back.output;
  back = Berth({"service", "rollback", "api"});
  ASSERT_EQ(back.status, 0) << back.output;
  inspect = Berth({"service", "inspect", "api", "-o", "json"});
  EXPECT_NE(inspect.output.find("\"state\": \"rollback_completed\""), std::string::npos)
      << inspect.output;
  EXPECT_NE(inspect.output.find("\"spec_version\": 3"), std::string::npos);
  Process::Exit bad_order = Berth({"service", "update", "api", "--update-order", "sideways"});
  EXPECT_EQ(bad_order.status, 1);
  EXPECT_EQ(bad_order.output,
            "berth: update_config.order: update order 'sideways' is not one of stop-first, "
            "start-first\n");
  ASSERT_EQ(Berth({"node", "update", "n1", "--label-add", "disk=ssd"}).status, 0);
  Process::Exit labels =
      Berth({"node", "update", "n1", "--label-add", "az=a", "--label-rm", "disk"});
  EXPECT_NE(labels.output.find("{\"az\":\"a\"}"), std::string::npos) << labels.output;
  Process::Exit rm = Berth({"service", "rm", "web", "api"});
  EXPECT_EQ(rm.output, "removed web\nremoved api\n");
  Process::Exit bad = Berth({"service", "update", "nothing", "--replicas", "1"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.output, "berth: no service 'nothing'\n");
}

// Nodes join a running cluster: `service rebalance` moves the tasks the
// engine would now place on them, as a rolling update, and a service with
// `--rebalance on-join` is rebalanced by berthd itself.
TEST_F(ServiceCli, RebalanceAfterNodesJoin) {
  for (const char* node : {"n1", "n2"})
    ASSERT_EQ(Berth({"node", "add", node, "--cpu", "4"}).status, 0);
  ASSERT_EQ(Berth({"service", "create", "web", "--replicas", "4", "--update-monitor", "0s"}).status,
            0);
  for (const char* node : {"n3", "n4"})
    ASSERT_EQ(Berth({"node", "add", node, "--cpu", "4"}).status, 0);
  auto running_on = [&](const std::string& node) {
    Process::Exit ps = Berth({"node", "ps", node, "--filter", "desired-state=running"});
    return std::count(ps.output.begin(), ps.output.end(), '\n') - 1;  // less the header
  };
  EXPECT_EQ(running_on("n3"), 0);  // joining alone moves nothing ("manual")
  Process::Exit rebalanced = Berth({"service", "rebalance", "web"});
  ASSERT_EQ(rebalanced.status, 0) << rebalanced.output;
  EXPECT_NE(rebalanced.output.find("verify: service converged"), std::string::npos)
      << rebalanced.output;
  for (const char* node : {"n1", "n2", "n3", "n4"}) EXPECT_EQ(running_on(node), 1) << node;
  Process::Exit inspect = Berth({"service", "inspect", "web", "-o", "json"});
  EXPECT_NE(inspect.output.find("\"message\": \"rebalance completed\""), std::string::npos)
      << inspect.output;
  EXPECT_NE(inspect.output.find("\"replaced\": 2"), std::string::npos) << inspect.output;
  Process::Exit history = Berth({"service", "ps", "web"});
  EXPECT_NE(history.output.find("(rebalance)"), std::string::npos) << history.output;

  // berthd rebalances an on-join service when n5 joins: the engine would
  // now put one of its four tasks there (the node with the fewest tasks).
  ASSERT_EQ(Berth({"service", "create", "api", "--replicas", "4", "--rebalance", "on-join",
                   "--update-monitor", "0s"})
                .status,
            0);
  ASSERT_EQ(Berth({"node", "add", "n5", "--cpu", "4"}).status, 0);
  std::string status;
  for (int i = 0; i < 300; ++i) {  // up to 30 s for the loop to finish the rebalance
    Process::Exit api = Berth({"service", "inspect", "api", "-o", "json"});
    if (api.output.find("\"update_kind\": \"rebalance\"") != std::string::npos &&
        api.output.find("\"state\": \"completed\"") != std::string::npos) {
      status = api.output;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(status.empty()) << "no completed rebalance of api";
  Process::Exit api_on_n5 = Berth({"node", "ps", "n5", "--filter", "desired-state=running"});
  EXPECT_NE(api_on_n5.output.find("api."), std::string::npos) << api_on_n5.output;
  Process::Exit api_tasks = Berth({"task", "ls", "--service", "api", "--desired-state", "running"});
  EXPECT_EQ(std::count(api_tasks.output.begin(), api_tasks.output.end(), '\n'), 5)
      << api_tasks.output;
}

// berthd and one berth-node, n1, whose tasks are processes of this machine.
class ServiceCliNode : public ServiceCli {
 protected:
  void SetUp() override {
    ServiceCli::SetUp();
    const std::string token_file = dir_.path() + "/node-token";
    Process::Exit token = Berth({"token", "show", "node"});
    ASSERT_EQ(token.status, 0) << token.output;
    std::ofstream(token_file) << token.output;
    std::filesystem::permissions(
        token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    node_ = std::make_unique<Process>(std::vector<std::string>{
        BERTH_NODE_BINARY, "--join", "https://127.0.0.1:" + port_, "--token-file", token_file,
        "--data-dir", dir_.path() + "/n1", "--hostname", "n1", "--listen", "127.0.0.1:0", "--exec",
        BERTH_EXEC_BINARY});
    ASSERT_NE(node_->WaitForLine("joined", std::chrono::seconds(30)), "") << "n1 did not join";
  }
  void TearDown() override {
    node_.reset();
    testing_support::KillTasksOf(dir_.path() + "/n1");
    ServiceCli::TearDown();
  }

  std::unique_ptr<Process> node_;
};

// `--constraint X -- sh -c ...` was refused ("The following argument was
// not expected: -c"), and a task that failed at once still gave "verify:
// service converged" and exit 0.
TEST_F(ServiceCliNode, CreateTakesTheCommandAfterDoubleDashAndReportsTasksThatFail) {
  Process::Exit hello = Berth({"service", "create", "hello", "--constraint", "node.hostname==n1",
                               "--", "sh", "-c", "echo hi; exec sleep 600"});
  ASSERT_EQ(hello.status, 0) << hello.output;
  EXPECT_NE(hello.output.find("verify: waiting 5s to verify that the tasks keep running\n"
                              "verify: service converged\n"),
            std::string::npos)
      << hello.output;
  Process::Exit logs = Berth({"service", "logs", "hello"});
  EXPECT_NE(logs.output.find("@n1    | hi\n"), std::string::npos) << logs.output;

  Process::Exit missing = Berth(
      {"service", "create", "missing", "--constraint", "node.hostname==n1", "--", "/no/such/prog"});
  EXPECT_EQ(missing.status, 1) << missing.output;
  EXPECT_EQ(missing.output.find("verify: service converged"), std::string::npos);
  EXPECT_NE(missing.output.find("berth: missing: task missing.1 (missing.1."), std::string::npos)
      << missing.output;
  EXPECT_NE(missing.output.find(") rejected: cannot run '/no/such/prog'"), std::string::npos)
      << missing.output;
  // The task never ran: the wait never said it did.
  EXPECT_EQ(missing.output.find("1 out of 1 tasks running"), std::string::npos) << missing.output;

  Process::Exit failing = Berth({"service", "create", "failing", "--", "false"});
  EXPECT_EQ(failing.status, 1) << failing.output;
  EXPECT_NE(failing.output.find(") failed: exit status 1\n"), std::string::npos) << failing.output;
}

// An update whose new task fails, with --update-failure-action rollback:
// the wait showed only its last line; it now shows the failed task and the
// rollback's start.
TEST_F(ServiceCliNode, UpdateShowsTheFailedTaskAndTheRollback) {
  ASSERT_EQ(Berth({"service", "create", "web", "--monitor", "0s", "--update-failure-action",
                   "rollback", "--", "sleep", "600"})
                .status,
            0);
  Process::Exit updated = Berth({"service", "update", "web", "--args", "not-a-number"});
  EXPECT_EQ(updated.status, 1) << updated.output;
  EXPECT_NE(updated.output.find("task web.1 (web.1."), std::string::npos) << updated.output;
  EXPECT_NE(updated.output.find(") failed: exit status 1\n"), std::string::npos) << updated.output;
  // berthd's reason ("update rolled back due to failure or early
  // termination of task web.1.N"); berthd loses it when the failed task
  // was the rollout's last and the rollback has nothing to replace, so
  // only the line is checked.
  EXPECT_NE(updated.output.find("rollback started: "), std::string::npos) << updated.output;
  Process::Exit inspect = Berth({"service", "inspect", "web"});
  EXPECT_NE(inspect.output.find("Spec version:        3 (rollback)"), std::string::npos)
      << inspect.output;
  EXPECT_NE(inspect.output.find(" Command:            sleep 600\n"), std::string::npos)
      << inspect.output;
}

}  // namespace
}  // namespace berth
