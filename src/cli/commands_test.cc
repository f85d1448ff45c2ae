// What every verb that talks to berthd shares: refusals and bad input exit
// non-zero with the reason, and the connection options.
#include "cli/commands.h"

#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

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

// A simple verb's usage error is found before connecting, so it exits 2
// even when berthd cannot be reached.
TEST(SimpleVerbs, UsageErrorsComeBeforeTheConnection) {
  Outcome filter = Berth({"service", "ps", "web", "--filter", "colour=red", "--data-dir", "/none"});
  EXPECT_EQ(filter.status, 2);
  EXPECT_EQ(filter.err,
            "berth: --filter 'colour=red': expected desired-state=STATE or node=NODE\n");
  Outcome set = Berth({"class", "set", "--server", "127.0.0.1:1", "--token", "t"});
  EXPECT_EQ(set.status, 2);
  EXPECT_EQ(set.err, "berth: nothing to set: give --percents, --requestor or --rebalance-*\n");
}

TEST_F(ClientCommandsTest, JsonOutputIsTheApisAnswer) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  Outcome ls = Run({"node", "ls", "-o", "json"});
  ASSERT_EQ(ls.status, 0) << ls.err;
  EXPECT_EQ(Json::parse(ls.out)["nodes"][0]["id"], "n1");
  Outcome token = Run({"token", "show", "node"});
  ASSERT_EQ(token.status, 0) << token.err;
  EXPECT_EQ(token.out, ApiGet("/v1/tokens/node")["token"].get<std::string>() + "\n");
}

}  // namespace
}  // namespace berth::cli
