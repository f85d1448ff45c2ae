#include "core/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace berth {
namespace {

using std::chrono::milliseconds;

// Each observation lands in the first bucket whose bound holds it (a
// bound is inclusive, as Prometheus's `le`); the counts are cumulative,
// the last one (+Inf) is every observation.
TEST(Histogram, CountsEachObservationInItsBucketCumulatively) {
  static constexpr double kBounds[] = {0.01, 0.1, 1};
  Histogram h(kBounds);
  h.Observe(milliseconds(5));
  h.Observe(milliseconds(10));
  h.Observe(milliseconds(50));
  h.Observe(milliseconds(2000));
  h.Observe(std::chrono::nanoseconds(-3));  // a clock step: counted as 0
  EXPECT_EQ(h.Cumulative(), (std::vector<uint64_t>{3, 4, 4, 5}));
  EXPECT_DOUBLE_EQ(h.sum_seconds(), 2.065);
}

TEST(Histogram, DefaultBoundsAscend) {
  Histogram h;
  ASSERT_FALSE(h.bounds().empty());
  EXPECT_TRUE(std::is_sorted(h.bounds().begin(), h.bounds().end()));
  EXPECT_EQ(h.Cumulative(), std::vector<uint64_t>(h.bounds().size() + 1, 0));
}

}  // namespace
}  // namespace berth
