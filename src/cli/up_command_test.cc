// `berth up`: a local Berth in the test's process.
#include "cli/up_command.h"

#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

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
