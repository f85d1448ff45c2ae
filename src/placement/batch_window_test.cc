#include "placement/batch_window.h"

#include <gtest/gtest.h>

namespace berth::placement {
namespace {

Timestamp Ms(int64_t ms) { return Timestamp{Duration{ms}}; }

TEST(BatchWindow, NothingWaitingIsNeverDue) {
  BatchWindow w;
  EXPECT_FALSE(w.Deadline().has_value());
  EXPECT_FALSE(w.Due(Ms(1'000'000)));
}

TEST(BatchWindow, RunsFiftyMillisecondsAfterALoneEvent) {
  BatchWindow w;
  w.OnEvent(Ms(1000));
  EXPECT_FALSE(w.Due(Ms(1049)));
  EXPECT_TRUE(w.Due(Ms(1050)));
}

TEST(BatchWindow, EachEventRestartsTheWait) {
  BatchWindow w;
  w.OnEvent(Ms(1000));
  w.OnEvent(Ms(1040));
  EXPECT_FALSE(w.Due(Ms(1050)));
  EXPECT_EQ(*w.Deadline(), Ms(1090));
}

TEST(BatchWindow, NeverDelaysMoreThanOneSecond) {
  BatchWindow w;
  for (int64_t t = 1000; t <= 3000; t += 40) w.OnEvent(Ms(t));
  EXPECT_EQ(*w.Deadline(), Ms(2000));
  EXPECT_TRUE(w.Due(Ms(2000)));
}

TEST(BatchWindow, ResetStartsAFreshWindow) {
  BatchWindow w;
  w.OnEvent(Ms(1000));
  w.Reset();
  EXPECT_FALSE(w.Due(Ms(5000)));
  w.OnEvent(Ms(5000));
  EXPECT_EQ(*w.Deadline(), Ms(5050));
}

}  // namespace
}  // namespace berth::placement
