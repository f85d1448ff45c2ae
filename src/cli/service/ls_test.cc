// `berth service ls` against a berthd.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, ServiceLsCountsRunningTasksOfTheCurrentTemplate) {
  ASSERT_EQ(Run({"node", "add", "n1", "--cpu", "1"}).status, 0);
  ASSERT_EQ(
      Run({"service", "create", "web", "-d", "--replicas", "3", "--reserve-cpu", "0.5"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "mon", "-d", "--mode", "global"}).status, 0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome ls = Run({"service", "ls"});
  ASSERT_EQ(ls.status, 0) << ls.err;
  EXPECT_EQ(ls.out,
            "ID   MODE        REPLICAS  VERSION\n"
            "mon  global      1/1       1\n"
            "web  replicated  2/3       1\n");
  Outcome json = Run({"service", "ls", "-o", "json"});
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(Json::parse(json.out)["services"].size(), 2u);
}

}  // namespace
}  // namespace berth::cli
