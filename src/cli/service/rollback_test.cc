// `berth service rollback` against a berthd.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, RollbackReturnsToThePreviousTemplateAndWaits) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "web", "-d"}).status, 0);
  Outcome none = Run({"service", "rollback", "web"});
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err, "berth: service 'web' has no previous spec to roll back to\n");
  ASSERT_EQ(Run({"service", "update", "web", "-d", "--reserve-cpu", "0.5"}).status, 0);
  Outcome back = Run({"service", "rollback", "web", "--monitor", "0s"});
  ASSERT_EQ(back.status, 0) << back.err;
  EXPECT_EQ(back.out.substr(0, 4), "web\n");
  EXPECT_TRUE(back.out.ends_with("verify: service converged\n")) << back.out;
  EXPECT_EQ(back.out.find("rollback started"), std::string::npos) << "its own start is no news";
  const Json service = ApiGet("/v1/services/web");
  EXPECT_EQ(service["update_kind"], "rollback");
  EXPECT_FALSE(service["task"].contains("resources")) << service.dump();
  EXPECT_EQ(service["update_status"]["state"], "rollback_completed");
}

}  // namespace
}  // namespace berth::cli
