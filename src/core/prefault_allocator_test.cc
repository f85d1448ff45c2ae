#include "core/prefault_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace berth {
namespace {

TEST(PrefaultAllocator, LargeArraysHoldTheirValuesAcrossGrowth) {
  std::vector<uint64_t, PrefaultAllocator<uint64_t>> values(kPrefaultBytes / 8 * 3 + 5);
  std::iota(values.begin(), values.end(), uint64_t{0});
  values.resize(values.size() * 2, 7);  // moves to a new mapping
  EXPECT_EQ(values[12345], 12345u);
  EXPECT_EQ(values[kPrefaultBytes / 8 * 3 + 4], kPrefaultBytes / 8 * 3 + 4);
  EXPECT_EQ(values.back(), 7u);
}

// Element types with heap members, through the sizes where the allocator
// switches from operator new to its own mappings and back.
TEST(PrefaultAllocator, ArraysGrowFromSmallToMappedAndShrink) {
  std::vector<std::string, PrefaultAllocator<std::string>> names;
  for (int i = 0; i < 200'000; ++i) names.push_back("task.with.a.long.name." + std::to_string(i));
  EXPECT_EQ(names[0], "task.with.a.long.name.0");
  EXPECT_EQ(names[199'999], "task.with.a.long.name.199999");
  names.resize(10);
  names.shrink_to_fit();
  EXPECT_EQ(names.back(), "task.with.a.long.name.9");
}

}  // namespace
}  // namespace berth
