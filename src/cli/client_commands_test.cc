// The berthd client commands and `berth up`, driven exactly as a user types
// them, against a berthd on loopback.
#include "cli/client_commands.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cli/app.h"
#include "daemon/daemon.h"
#include "store/test_dir.h"

namespace berth::cli {
namespace {

using api::Json;

struct Outcome {
  int status;
  std::string out, err;
};

Outcome Berth(std::vector<std::string> args) {
  std::istringstream in;
  std::ostringstream out, err;
  ManualClock clock;
  const int status = RunBerth(args, in, out, err, clock);
  return {status, out.str(), err.str()};
}

TEST(ParsePublish, ReadsDockerStylePorts) {
  Result<Json> port = ParsePublish("mode=host,target=80,published=8080");
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(*port, (Json{{"mode", "host"}, {"target", 80}, {"published", 8080}}));
  EXPECT_EQ(ParsePublish("mode=host,target=eighty").status().message(),
            "--publish 'mode=host,target=eighty': target must be a port number");
  EXPECT_EQ(ParsePublish("colour=red").status().code(), StatusCode::kInvalidArgument);
}

TEST(ParsePlacementPref, ReadsSpreadWeightsPackAndPrefer) {
  EXPECT_EQ(*ParsePlacementPref("spread=node.labels.az"), (Json{{"spread", "node.labels.az"}}));
  EXPECT_EQ(*ParsePlacementPref("spread=node.labels.az:east=3,west=1,*=0"),
            Json::parse(R"({"spread": "node.labels.az",
                            "weights": {"east": 3, "west": 1, "*": 0}})"));
  EXPECT_EQ(*ParsePlacementPref("pack=node.id"), (Json{{"pack", "node.id"}}));
  EXPECT_EQ(*ParsePlacementPref("prefer=node.labels.disk==ssd"),
            (Json{{"prefer", "node.labels.disk==ssd"}}));
  EXPECT_EQ(ParsePlacementPref("pack=node.labels.rack:r1=2").status().message(),
            "--placement-pref 'pack=node.labels.rack:r1=2': only spread takes weights");
  EXPECT_EQ(ParsePlacementPref("spread=node.labels.az:east=many").status().message(),
            "--placement-pref 'spread=node.labels.az:east=many': expected VALUE=WEIGHT (a whole "
            "number) after ':', got 'east=many'");
  EXPECT_EQ(ParsePlacementPref("binpack").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePlacementPref("spread=node.labels.az:east=+3").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePlacementPref("spread=node.labels.az:east=1,east=2").status().message(),
            "--placement-pref 'spread=node.labels.az:east=1,east=2': 'east' is given two weights");
}

TEST(ParseAffinity, ReadsClassicSwarmForms) {
  EXPECT_EQ(*ParseAffinity("service==db"), (Json{{"service", "db"}}));
  EXPECT_EQ(*ParseAffinity("service!=web"), (Json{{"service", "web"}, {"anti", true}}));
  EXPECT_EQ(*ParseAffinity("service==~db"), (Json{{"service", "db"}, {"soft", true}}));
  EXPECT_EQ(*ParseAffinity("service!=~web"),
            (Json{{"service", "web"}, {"anti", true}, {"soft", true}}));
  EXPECT_EQ(ParseAffinity("container==db").status().message(),
            "--affinity 'container==db': expected service==ID, service!=ID, service==~ID or "
            "service!=~ID");
  EXPECT_EQ(ParseAffinity("service=db").status().code(), StatusCode::kInvalidArgument);
}

class ClientCommandsTest : public testing::Test {
 protected:
  void SetUp() override {
    daemon::DaemonOptions options;
    options.data_dir = dir_.path() + "/data";
    options.port = 0;
    // Passes run when a test waits for the loop to settle, so the changes a
    // test makes before that are decided together (job submissions in one
    // admission iteration) however fast the commands run.
    options.loop.window = {std::chrono::hours(1), std::chrono::hours(1)};
    Result<std::unique_ptr<daemon::Daemon>> daemon = daemon::Daemon::Open(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status().message();
    daemon_ = std::move(*daemon);
    connection_ = {"--server", "127.0.0.1:" + std::to_string(daemon_->port()), "--data-dir",
                   options.data_dir};
  }
  Outcome Run(std::vector<std::string> args) {
    args.insert(args.end(), connection_.begin(), connection_.end());
    return Berth(args);
  }

  store::TestDir dir_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::vector<std::string> connection_;
};

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

TEST_F(ClientCommandsTest, PlacementPreferencesAreAddedAndRemovedByUpdate) {
  ASSERT_EQ(Run({"node", "add", "n1", "--label", "az=a"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "web", "-d", "--placement-pref", "spread=node.labels.az:a=2",
                 "--placement-pref", "prefer=node.labels.disk==ssd"})
                .status,
            0);
  Outcome updated =
      Run({"service", "update", "web", "-d", "--placement-pref-rm", "spread=node.labels.az:a=2",
           "--placement-pref-add", "pack=node.id", "--affinity-add", "service!=web"});
  ASSERT_EQ(updated.status, 0) << updated.err;
  Json task = Json::parse(Run({"service", "inspect", "web", "-o", "json"}).out)["task"];
  EXPECT_EQ(task["preferences"],
            Json::parse(R"([{"prefer": "node.labels.disk==ssd"}, {"pack": "node.id"}])"));
  EXPECT_EQ(task["affinity"], Json::parse(R"([{"service": "web", "anti": true}])"));
  ASSERT_EQ(Run({"service", "update", "web", "-d", "--affinity-rm", "service!=web"}).status, 0);
  task = Json::parse(Run({"service", "inspect", "web", "-o", "json"}).out)["task"];
  EXPECT_FALSE(task.contains("affinity")) << task.dump();
  Outcome missing =
      Run({"service", "update", "web", "-d", "--placement-pref-rm", "spread=node.labels.az"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("the service has no such preference"), std::string::npos)
      << missing.err;
  Outcome refused =
      Run({"service", "create", "bad", "-d", "--placement-pref", "pack=node.hostname"});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("unsupported descriptor 'node.hostname'"), std::string::npos)
      << refused.err;
}

TEST_F(ClientCommandsTest, RebalanceIsACommandAndAServiceSetting) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "api", "-d", "--rebalance", "on-join"}).status, 0);
  EXPECT_EQ(Json::parse(Run({"service", "inspect", "api", "-o", "json"}).out)["rebalance"],
            "on-join");
  ASSERT_EQ(Run({"service", "update", "api", "-d", "--rebalance", "manual"}).status, 0);
  EXPECT_EQ(Json::parse(Run({"service", "inspect", "api", "-o", "json"}).out)["rebalance"],
            "manual");
  Outcome bad = Run({"service", "update", "api", "-d", "--rebalance", "sometimes"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--rebalance"), std::string::npos) << bad.err;
  Outcome rebalanced = Run({"service", "rebalance", "api", "-d"});
  ASSERT_EQ(rebalanced.status, 0) << rebalanced.err;
  EXPECT_EQ(rebalanced.out, "api\n");
  const Json service = Json::parse(Run({"service", "inspect", "api", "-o", "json"}).out);
  EXPECT_EQ(service["update_kind"], "rebalance");
  EXPECT_EQ(service["spec_version"], 2);
  ASSERT_EQ(Run({"service", "create", "mon", "-d", "--mode", "global"}).status, 0);
  Outcome global = Run({"service", "rebalance", "mon"});
  EXPECT_EQ(global.status, 1);
  EXPECT_EQ(global.err,
            "berth: service 'mon' is global: it runs one task on every node, so it has nothing to "
            "rebalance\n");
}

TEST_F(ClientCommandsTest, RefusalsAndBadInputExitNonZeroWithTheReason) {
  Outcome bad = Run({"service", "create", "x", "--constraint", "node.labels.az=a"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "berth: task.constraints[0]: constraint expected one operator from ==, !=\n");
  Outcome scale = Run({"service", "scale", "web"});
  EXPECT_EQ(scale.status, 2);
  EXPECT_EQ(scale.err, "berth: expected SERVICE=REPLICAS, e.g. web=5, got 'web'\n");
  Outcome missing = Run({"task", "why", "nothing"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "berth: no task 'nothing'\n");
  Outcome wrong = Run({"node", "ls", "--token", "wrong"});
  EXPECT_EQ(wrong.status, 1);
  EXPECT_EQ(wrong.err, "berth: unauthorized: wrong bearer token\n");
  Outcome no_token = Berth({"node", "ls", "--data-dir", dir_.path() + "/nowhere"});
  EXPECT_EQ(no_token.status, 2);
  EXPECT_NE(no_token.err.find("no API token"), std::string::npos) << no_token.err;
}

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

TEST(BerthUp, StartsBerthPlacesTheDemoAndStops) {
  store::TestDir dir;
  Outcome up = Berth(
      {"up", "--demo", "--once", "--port", "0", "--nodes", "2", "--data-dir", dir.path() + "/d"});
  ASSERT_EQ(up.status, 0) << up.err;
  EXPECT_NE(up.out.find("demo.4  running  sim-2"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("with 2 simulated nodes and has stopped (--once)"), std::string::npos)
      << up.out;
  EXPECT_EQ(up.out.find("is running"), std::string::npos) << "issue 13: --once stops; " << up.out;
  Outcome again = Berth(
      {"up", "--demo", "--once", "--port", "0", "--nodes", "2", "--data-dir", dir.path() + "/d"});
  ASSERT_EQ(again.status, 0) << again.err;  // the nodes and service exist already: reused
  EXPECT_EQ(again.out, up.out.substr(0, up.out.find("berthd ran at")) +
                           again.out.substr(again.out.find("berthd ran at")));
}

}  // namespace
}  // namespace berth::cli
