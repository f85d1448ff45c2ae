#include "cli/output.h"

#include <gtest/gtest.h>

#include <sstream>

namespace berth::cli {
namespace {

using api::Json;

TEST(FormatMemory, BinaryUnitsWhateverTheStoredSpelling) {
  EXPECT_EQ(FormatMemory(Json(25276063744)), "23.5Gi");
  EXPECT_EQ(FormatMemory(Json("1Ti")), "1Ti");
  EXPECT_EQ(FormatMemory(Json("8Gi")), "8Gi");
  EXPECT_EQ(FormatMemory(Json(1073741824)), "1Gi");
  EXPECT_EQ(FormatMemory(Json("1.5G")), "1.4Gi");
  EXPECT_EQ(FormatMemory(Json("512Mi")), "512Mi");
  EXPECT_EQ(FormatMemory(Json(512)), "512");
  EXPECT_EQ(FormatMemory(Json()), "-");
  EXPECT_EQ(FormatMemory(Json("lots")), "lots");
}

TEST(FormatCpu, CpusWhateverTheStoredSpelling) {
  EXPECT_EQ(FormatCpu(Json("2000m")), "2");
  EXPECT_EQ(FormatCpu(Json(2)), "2");
  EXPECT_EQ(FormatCpu(Json("500m")), "0.5");
  EXPECT_EQ(FormatCpu(Json(1.25)), "1.25");
  EXPECT_EQ(FormatCpu(Json("1001m")), "1.001");
  EXPECT_EQ(FormatCpu(Json()), "-");
}

TEST(PrintTable, PadsColumnsButTheLast) {
  std::ostringstream out;
  PrintTable(out, {"A", "BB", "C"}, {{"xyz", "1", "long message"}, {"w", "22", ""}});
  EXPECT_EQ(out.str(),
            "A    BB  C\n"
            "xyz  1   long message\n"
            "w    22  \n");
  EXPECT_EQ(Cut(std::string(61, 'x')), std::string(57, 'x') + "...");
  EXPECT_EQ(Cut("short"), "short");
}

}  // namespace
}  // namespace berth::cli
