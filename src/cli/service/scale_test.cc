// `berth service scale` against a berthd: it waits, quietly.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, ScaleWaitsQuietlyForTheNewTasks) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "web", "-d"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "api", "-d"}).status, 0);
  Outcome scaled = Run({"service", "scale", "web=3", "api=2", "--monitor", "0s"});
  ASSERT_EQ(scaled.status, 0) << scaled.err;
  EXPECT_EQ(scaled.out, "web scaled to 3\napi scaled to 2\n");
  // Waited: every new task runs already.
  EXPECT_EQ(ApiGet("/v1/tasks?service=web&state=running")["tasks"].size(), 3u);
  EXPECT_EQ(ApiGet("/v1/tasks?service=api&state=running")["tasks"].size(), 2u);
  Outcome detached = Run({"service", "scale", "web=1", "-d"});
  ASSERT_EQ(detached.status, 0) << detached.err;
  EXPECT_EQ(detached.out, "web scaled to 1\n");
  Outcome bad = Run({"service", "scale", "web=1", "api=x"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "berth: expected SERVICE=REPLICAS, e.g. web=5, got 'api=x'\n");
  EXPECT_EQ(ApiGet("/v1/services/web")["replicas"], 1) << "nothing changed by a bad item";
}

// scale returned at once, so a replica that failed went unnoticed.
TEST_F(ClientCommandsTest, ScaleReportsATaskThatFails) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(
      Run({"service", "create", "crash", "-d", "--run-duration", "0.2", "--run-outcome", "fail"})
          .status,
      0);
  Outcome scaled = Run({"service", "scale", "crash=2"});
  EXPECT_EQ(scaled.status, 1);
  EXPECT_EQ(scaled.out, "crash scaled to 2\n");
  EXPECT_NE(scaled.err.find("berth: crash: task crash."), std::string::npos) << scaled.err;
  EXPECT_NE(scaled.err.find(") failed: failed after "), std::string::npos) << scaled.err;
}

}  // namespace
}  // namespace berth::cli
