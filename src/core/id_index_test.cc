#include "core/id_index.h"

#include <gtest/gtest.h>

#include <string>

namespace berth {
namespace {

TEST(IdIndex, FindsEveryInsertedIdAcrossGrowth) {
  std::vector<std::string> ids;
  IdIndex index;
  auto id_of = [&](uint32_t i) { return std::string_view(ids[i]); };
  for (uint32_t i = 0; i < 5000; ++i) {
    ids.push_back("task-" + std::to_string(i * 7919 % 100003));
    index.Insert(i, id_of);
  }
  EXPECT_EQ(index.size(), 5000u);
  for (uint32_t i = 0; i < 5000; ++i) EXPECT_EQ(index.Find(ids[i], id_of), i);
  EXPECT_FALSE(index.Find("task-missing", id_of).has_value());
  EXPECT_FALSE(index.Find("", id_of).has_value());
}

// Reserving keeps what is there and makes room; reserving less changes
// nothing.
TEST(IdIndex, ReserveKeepsEntriesAndMakesRoom) {
  std::vector<std::string> ids;
  IdIndex index;
  auto id_of = [&](uint32_t i) { return std::string_view(ids[i]); };
  for (uint32_t i = 0; i < 100; ++i) {
    ids.push_back("n" + std::to_string(i));
    index.Insert(i, id_of);
  }
  index.Reserve(10, id_of);
  index.Reserve(3000, id_of);
  for (uint32_t i = 100; i < 3000; ++i) {
    ids.push_back("n" + std::to_string(i));
    index.Insert(i, id_of);
  }
  EXPECT_EQ(index.size(), 3000u);
  for (uint32_t i = 0; i < 3000; ++i) ASSERT_EQ(index.Find(ids[i], id_of), i);
}

// Erasing every third entry, in an order unrelated to their slots, leaves
// the rest findable (the probe runs stay whole) and the erased ones gone;
// an erased id can be inserted again.
TEST(IdIndex, EraseKeepsTheOtherEntriesFindable) {
  std::vector<std::string> ids;
  IdIndex index;
  auto id_of = [&](uint32_t i) { return std::string_view(ids[i]); };
  for (uint32_t i = 0; i < 3000; ++i) {
    ids.push_back("n" + std::to_string(i));
    index.Insert(i, id_of);
  }
  for (uint32_t i = 2999; i < 3000; i -= 3) index.Erase(i, id_of);
  EXPECT_EQ(index.size(), 2000u);
  for (uint32_t i = 0; i < 3000; ++i) {
    if ((2999 - i) % 3 == 0)
      EXPECT_FALSE(index.Find(ids[i], id_of).has_value()) << i;
    else
      EXPECT_EQ(index.Find(ids[i], id_of), i) << i;
  }
  index.Erase(2999, id_of);  // not in the index: nothing happens
  EXPECT_EQ(index.size(), 2000u);
  index.Insert(2999, id_of);
  EXPECT_EQ(index.Find(ids[2999], id_of), 2999u);
}

TEST(IdIndex, EmptyIndexFindsNothing) {
  IdIndex index;
  EXPECT_FALSE(index.Find("x", [](uint32_t) { return std::string_view(); }).has_value());
}

}  // namespace
}  // namespace berth
