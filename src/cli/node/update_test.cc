// `berth node update` against a berthd.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, NodeUpdateEditsTheLabelsAsTheyAre) {
  ASSERT_EQ(Run({"node", "add", "n1", "--label", "az=a", "--label", "disk=ssd"}).status, 0);
  Outcome edited = Run({"node", "update", "n1", "--label-add", "rack=r1", "--label-rm", "disk"});
  ASSERT_EQ(edited.status, 0) << edited.err;
  EXPECT_EQ(ApiGet("/v1/nodes/n1")["labels"], (Json{{"az", "a"}, {"rack", "r1"}}));
  // --label replaces them, then --label-add edits that.
  ASSERT_EQ(Run({"node", "update", "n1", "--label", "zone=z", "--label-add", "az=b", "-o", "json"})
                .status,
            0);
  EXPECT_EQ(ApiGet("/v1/nodes/n1")["labels"], (Json{{"zone", "z"}, {"az", "b"}}));
  Outcome absent = Run({"node", "update", "n1", "--label-rm", "disk"});
  EXPECT_EQ(absent.status, 1);
  EXPECT_EQ(absent.err, "berth: --label-rm 'disk': node n1 has no such label\n");
  Outcome nothing = Run({"node", "update", "n1"});
  EXPECT_EQ(nothing.status, 2);
  EXPECT_EQ(nothing.err,
            "berth: nothing to update: give --state, --availability or a label flag\n");
  Outcome state = Run({"node", "update", "n1", "--availability", "pause"});
  ASSERT_EQ(state.status, 0) << state.err;
  EXPECT_NE(state.out.find("n1  -         ready  pause"), std::string::npos) << state.out;
}

}  // namespace
}  // namespace berth::cli
