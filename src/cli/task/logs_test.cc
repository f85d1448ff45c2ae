// `berth task logs` against a berthd without berth-nodes (the output of
// real tasks: tests/node_e2e_test.cc).
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, TaskLogsSayWhyATaskHasNone) {
  Outcome unknown = Run({"task", "logs", "web.1"});
  EXPECT_EQ(unknown.status, 1);
  EXPECT_EQ(unknown.err, "berth: no task 'web.1'\n");
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "web", "-d"}).status, 0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  Outcome simulated = Run({"task", "logs", "web.1", "-f"});
  EXPECT_EQ(simulated.status, 1);
  EXPECT_NE(simulated.err.find("runs on node 'n1', which is simulated: it has no logs"),
            std::string::npos)
      << simulated.err;
}

}  // namespace
}  // namespace berth::cli
