// `berth service logs` against a berthd without berth-nodes (the output
// of real tasks: tests/node_e2e_test.cc).
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, ServiceLogsNeedATaskThatWasPlaced) {
  ASSERT_EQ(Run({"service", "create", "web", "-d"}).status, 0);
  Outcome none = Run({"service", "logs", "web"});
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err, "berth: service web has no task that was placed on a node\n");
  // A simulated task has no logs: it is left out of a service's.
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome simulated = Run({"service", "logs", "web", "--tail", "5", "-t"});
  EXPECT_EQ(simulated.status, 0) << simulated.err;
  EXPECT_EQ(simulated.out, "");
  EXPECT_EQ(Run({"service", "logs", "nothing"}).err,
            "berth: service nothing has no task that was placed on a node\n");
}

}  // namespace
}  // namespace berth::cli
