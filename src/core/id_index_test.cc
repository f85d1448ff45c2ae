#include "core/id_index.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

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

// Ids "n<i>" in an array and the index over them.
struct Named {
  std::vector<std::string> ids;
  IdIndex index;
  std::string_view IdOf(uint32_t i) const { return ids[i]; }
  void AddUpTo(uint32_t count) {
    for (auto i = static_cast<uint32_t>(ids.size()); i < count; ++i) {
      ids.push_back("n" + std::to_string(i));
      index.Insert(i, [&](uint32_t j) { return IdOf(j); });
    }
  }
  std::optional<uint32_t> Find(uint32_t i) const {
    return index.Find(ids[i], [&](uint32_t j) { return IdOf(j); });
  }
};

// Reserving keeps what is there and makes room; reserving less changes
// nothing.
TEST(IdIndex, ReserveKeepsEntriesAndMakesRoom) {
  Named n;
  n.AddUpTo(100);
  n.index.Reserve(10, [&](uint32_t j) { return n.IdOf(j); });
  n.index.Reserve(3000, [&](uint32_t j) { return n.IdOf(j); });
  n.AddUpTo(3000);
  EXPECT_EQ(n.index.size(), 3000u);
  for (uint32_t i = 0; i < 3000; ++i) ASSERT_EQ(n.Find(i), i);
}

// Erasing every third entry, in an order unrelated to their slots, leaves
// the rest findable (the probe runs stay whole) and the erased ones gone;
// an erased id can be inserted again.
TEST(IdIndex, EraseKeepsTheOtherEntriesFindable) {
  Named n;
  n.AddUpTo(3000);
  auto id_of = [&](uint32_t j) { return n.IdOf(j); };
  for (uint32_t i = 2999; i < 3000; i -= 3) n.index.Erase(i, id_of);
  EXPECT_EQ(n.index.size(), 2000u);
  for (uint32_t i = 0; i < 3000; ++i) {
    if ((2999 - i) % 3 == 0)
      EXPECT_FALSE(n.Find(i).has_value()) << i;
    else
      EXPECT_EQ(n.Find(i), i) << i;
  }
  n.index.Erase(2999, id_of);  // not in the index: nothing happens
  EXPECT_EQ(n.index.size(), 2000u);
  n.index.Insert(2999, id_of);
  EXPECT_EQ(n.Find(2999), 2999u);
}

TEST(IdIndex, EmptyIndexFindsNothing) {
  IdIndex index;
  EXPECT_FALSE(index.Find("x", [](uint32_t) { return std::string_view(); }).has_value());
}

}  // namespace
}  // namespace berth
