#include "core/quantity.h"

#include <gtest/gtest.h>

namespace berth {
namespace {

TEST(Quantity, CpuText) {
  EXPECT_EQ(*ParseMilliCpu("2"), 2000);
  EXPECT_EQ(*ParseMilliCpu("0.5"), 500);
  EXPECT_EQ(*ParseMilliCpu("500m"), 500);
  EXPECT_EQ(*ParseMilliCpu("0.001"), 1);
  EXPECT_EQ(*ParseMilliCpu(".25"), 250);
  for (const char* bad : {"", "m", "0.0005", "-1", "1.5m", "abc", "1e3", "1.", "1 "})
    EXPECT_FALSE(ParseMilliCpu(bad).ok()) << bad;
  EXPECT_EQ(ParseMilliCpu("x").status().message(),
            "invalid cpu quantity 'x' (expected CPUs like 0.5, or milli-CPUs like 500m)");
}

TEST(Quantity, CpuNumber) {
  EXPECT_EQ(*MilliCpuFromNumber(0.5), 500);
  EXPECT_EQ(*MilliCpuFromNumber(4), 4000);
  EXPECT_EQ(*MilliCpuFromNumber(0.1), 100);
  EXPECT_FALSE(MilliCpuFromNumber(0.0001).ok());
  EXPECT_FALSE(MilliCpuFromNumber(-1).ok());
  // Issue 13: the number is quoted as written, not as "1.234500" or 300 digits.
  EXPECT_EQ(MilliCpuFromNumber(1.2345).status().message(),
            "invalid cpu quantity 1.2345 (expected a non-negative number with at most 3 decimals)");
  EXPECT_EQ(MilliCpuFromNumber(1e300).status().message(),
            "invalid cpu quantity 1e+300 (expected a non-negative number with at most 3 decimals)");
}

TEST(Quantity, BytesText) {
  EXPECT_EQ(*ParseBytes("1024"), 1024);
  EXPECT_EQ(*ParseBytes("1k"), 1000);
  EXPECT_EQ(*ParseBytes("512Mi"), 512LL << 20);
  EXPECT_EQ(*ParseBytes("8Gi"), 8LL << 30);
  EXPECT_EQ(*ParseBytes("2T"), 2'000'000'000'000LL);
  EXPECT_EQ(*ParseBytes("1Ti"), 1LL << 40);
  EXPECT_EQ(*ParseBytes("1.5Gi"), 3LL << 29);
  EXPECT_EQ(*ParseBytes("1G"), 1'000'000'000);
  for (const char* bad : {"", "Gi", "1.5", "8Gx", "-1", "1K", "0.1k1", "99999999999T"})
    EXPECT_FALSE(ParseBytes(bad).ok()) << bad;
}

TEST(Quantity, BytesNumber) {
  EXPECT_EQ(*BytesFromNumber(1e9), 1'000'000'000);
  EXPECT_FALSE(BytesFromNumber(1.5).ok());
  EXPECT_FALSE(BytesFromNumber(-2).ok());
  EXPECT_EQ(BytesFromNumber(1e300).status().message(),
            "invalid memory quantity 1e+300 (expected a non-negative whole number of bytes)");
}

}  // namespace
}  // namespace berth
