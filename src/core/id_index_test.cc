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

TEST(IdIndex, EmptyIndexFindsNothing) {
  IdIndex index;
  EXPECT_FALSE(index.Find("x", [](uint32_t) { return std::string_view(); }).has_value());
}

}  // namespace
}  // namespace berth
