// The service lifecycle through the `berth` binary against a berthd
// process, as the README's sequence types it: `service create` waits and
// prints its progress (standard output is a pipe here, so lines, not a
// live display), then `task why`, `service ps`, `node ps`, `service
// update` and `service ls`. Every process is started here and stopped by
// its pid.
#include <gtest/gtest.h>

#include <algorithm>
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
  // Runs `berth ARGS --server ... --data-dir ...`; its exit status and output.
  Process::Exit Berth(std::vector<std::string> args) {
    args.insert(args.begin(), BERTH_BINARY);
    for (std::string a : {std::string("--server"), "127.0.0.1:" + port_, std::string("--data-dir"),
                          dir_.path() + "/d"})
      args.push_back(a);
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

}  // namespace
}  // namespace berth
