// `berth service rebalance` and the --rebalance setting against a berthd.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

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

TEST_F(ClientCommandsTest, RebalanceWaitsForTheRollout) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "api", "--replicas", "2", "--update-monitor", "0s"}).status,
            0);
  ASSERT_EQ(Run({"node", "add", "n2"}).status, 0);
  Outcome rebalanced = Run({"service", "rebalance", "api"});
  ASSERT_EQ(rebalanced.status, 0) << rebalanced.err;
  EXPECT_TRUE(rebalanced.out.ends_with("verify: service converged\n")) << rebalanced.out;
  EXPECT_EQ(ApiGet("/v1/services/api")["update_status"]["message"], "rebalance completed");
  EXPECT_EQ(ApiGet("/v1/tasks?node=n2&desired_state=running")["tasks"].size(), 1u);
}

}  // namespace
}  // namespace berth::cli
