#include "core/id_order.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>

namespace berth {
namespace {

// The same order as a plain sort of the strings, for short ids, ids that
// are prefixes of others, and long ids sharing their first 16 bytes.
TEST(SortByIds, OrdersAsTheStringsDo) {
  std::mt19937_64 random(3);
  std::vector<std::string> ids = {"", "a", "a.1", "a.10", "a.2", "b"};
  for (int i = 0; i < 2000; ++i) {
    std::string id = random() % 2 ? "service-with-a-long-name." : "web.";
    id += std::to_string(random() % 500);
    if (random() % 4 == 0) id += std::string(1, static_cast<char>('\x01' + random() % 250));
    ids.push_back(id);
  }
  std::vector<uint32_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), random);
  SortByIds(order, [&](uint32_t i) { return std::string_view(ids[i]); });
  std::vector<std::string> sorted_ids;
  for (uint32_t i : order) sorted_ids.push_back(ids[i]);
  std::vector<std::string> expected = ids;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted_ids, expected);
}

}  // namespace
}  // namespace berth
