#include "store/task_blocks.h"

#include <gtest/gtest.h>

namespace berth::store::blocks {
namespace {

TEST(TaskBlocks, NumberedSlotsShareABlockSixteenAtATime) {
  EXPECT_EQ(BlockOf("web.0"), "web.0");
  EXPECT_EQ(BlockOf("web.15"), "web.0");
  EXPECT_EQ(BlockOf("web.16"), "web.1");
  EXPECT_EQ(BlockOf("web.16.3"), "web.1");  // a slot's later task
  EXPECT_EQ(BlockOf("build.99999"), "build.6249");
}

TEST(TaskBlocks, OtherIdsAreHashedWithinTheirOwner) {
  const std::string block = BlockOf("web.node-7");
  EXPECT_TRUE(block.starts_with("web.h")) << block;
  EXPECT_EQ(BlockOf("web.node-7"), block);  // stable
  EXPECT_LT(std::stoul(block.substr(5)), kHashBuckets);
  EXPECT_TRUE(BlockOf("solo").starts_with("solo.h"));
  EXPECT_TRUE(BlockOf("web.99999999999999999999999").starts_with("web.h"));  // past 64 bits
  EXPECT_TRUE(BlockOf("web.-1").starts_with("web.h"));
}

// Every id that starts with a prefix is in a block that starts with the
// prefix's block prefix.
TEST(TaskBlocks, APrefixNamesTheBlocksThatMayHoldIt) {
  for (const std::string id : {"web.12", "web.12.3", "web.x", "web", "webby.1", "we.1"})
    for (size_t n = 0; n <= id.size(); ++n) {
      const std::string prefix = id.substr(0, n);
      EXPECT_TRUE(BlockOf(id).starts_with(BlockPrefix(prefix))) << id << " / " << prefix;
    }
  EXPECT_EQ(BlockPrefix("web.1"), "web.");
  EXPECT_EQ(BlockPrefix("web"), "web");
}

TEST(TaskBlocks, EntriesRoundTrip) {
  const std::vector<Entry> entries = {{"web.1", 7, false, "{\"a\":1}"},
                                      {"web.2", 0, false, std::string("x\0:,y", 5)},
                                      {"web.3", 0, true, ""},
                                      {"web.4", 0, false, ""}};
  Result<std::vector<Entry>> back = Decode(Encode(entries));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, entries);
  EXPECT_TRUE(Decode(Encode({}))->empty());
}

TEST(TaskBlocks, DamagedValuesAreRefused) {
  const std::string good = Encode({{"a.1", 3, false, "xy"}, {"a.2", 0, false, "z"}});
  for (size_t cut = 0; cut < good.size(); ++cut) {
    if (cut == 3 || cut == good.find("3:a.2")) continue;  // whole entries
    EXPECT_FALSE(Decode(good.substr(0, cut)).ok()) << cut;
  }
  EXPECT_FALSE(Decode("B1;3:a.13,l2:xyz").ok());                  // trailing bytes
  EXPECT_FALSE(Decode("B1;3:a.20,l0:3:a.10,l0:").ok());           // out of order
  EXPECT_FALSE(Decode("B1;3:a.27,d0:").ok());                     // an old tombstone
  EXPECT_FALSE(Decode("B1;3:a.20,x0:").ok());                     // no such state
  EXPECT_FALSE(Decode("B1;3:a.299999999999999999999,l0:").ok());  // revision past 64 bits
  EXPECT_FALSE(Decode("B1;0:0,l0:").ok());                        // an empty id
  EXPECT_FALSE(Decode("{}").ok());
}

TEST(TaskBlocks, CarryGivesTheBlocksRevisionAndDropsTombstones) {
  std::vector<Entry> entries = {
      {"a.1", 3, false, "x"}, {"a.2", 0, false, "y"}, {"a.3", 0, true, ""}};
  Carry(entries, 9);
  EXPECT_EQ(entries, (std::vector<Entry>{{"a.1", 3, false, "x"}, {"a.2", 9, false, "y"}}));
  EXPECT_EQ(RevisionOf(entries[0], 12), 3);
  EXPECT_EQ(RevisionOf({"a.4", 0, false, ""}, 12), 12);
}

}  // namespace
}  // namespace berth::store::blocks
