// `berth service rm` against a berthd.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, ServiceRmRemovesEachAndReportsTheRefused) {
  ASSERT_EQ(Run({"service", "create", "web", "-d"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "api", "-d"}).status, 0);
  Outcome rm = Run({"service", "rm", "web", "nothing", "api"});
  EXPECT_EQ(rm.status, 1);
  EXPECT_EQ(rm.out, "removed web\nremoved api\n");
  EXPECT_EQ(rm.err, "berth: no service 'nothing'\n");
  EXPECT_TRUE(ApiGet("/v1/services")["services"].empty());
}

}  // namespace
}  // namespace berth::cli
