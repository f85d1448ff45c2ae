#include "core/time.h"

#include <gtest/gtest.h>

#include <ctime>
#include <random>
#include <thread>

namespace berth {
namespace {

int64_t Ms(const char* text) {
  auto t = ParseRfc3339(text);
  EXPECT_TRUE(t.ok()) << text << ": " << t.status().message();
  return t.ok() ? t->time_since_epoch().count() : -1;
}

TEST(Time, ParsesRfc3339) {
  EXPECT_EQ(Ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(Ms("2026-01-01T00:10:00Z"), 1767226200000);
  EXPECT_EQ(Ms("2026-01-01T00:10:00.25Z"), 1767226200250);
  EXPECT_EQ(Ms("2026-01-01T01:10:00+01:00"), 1767226200000);
  EXPECT_EQ(Ms("2025-12-31T23:10:00-01:00"), 1767226200000);
  EXPECT_EQ(Ms("2024-02-29t00:00:00z"), Ms("2024-02-29T00:00:00Z"));
}

TEST(Time, RejectsMalformedTimes) {
  for (const char* bad : {"", "2026-01-01", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
                          "2026-01-01T00:00:00", "2026-01-01T00:00:00+0100", "2026-01-01T24:00:00Z",
                          "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00Zx"})
    EXPECT_FALSE(ParseRfc3339(bad).ok()) << bad;
}

TEST(Time, FormatsRoundTrip) {
  for (const char* text : {"2026-01-01T00:10:00Z", "1999-12-31T23:59:59.123Z"})
    EXPECT_EQ(FormatRfc3339(*ParseRfc3339(text)), text);
}

// The hand-written formatter agrees with the C library's calendar on times
// spread over 1900-2199, before and after the epoch.
TEST(Time, FormatsAsTheCLibraryDoes) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> any(-2'208'988'800'000, 7'258'118'399'999);
  for (int i = 0; i < 20000; ++i) {
    const int64_t ms = i < 3 ? (i - 1) : any(rng);  // -1, 0, 1 ms first
    const int64_t seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    const std::time_t tt = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char want[64];
    std::snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::string expected = want;
    if (const int64_t millis = ms - seconds * 1000; millis != 0) {
      std::snprintf(want, sizeof want, ".%03d", static_cast<int>(millis));
      expected += want;
    }
    ASSERT_EQ(FormatRfc3339(Timestamp{Duration{ms}}), expected + "Z") << ms;
  }
}

TEST(Time, ManualClockMovesOnlyWhenTold) {
  ManualClock clock(Timestamp{Duration{1000}});
  EXPECT_EQ(clock.Now(), Timestamp{Duration{1000}});
  clock.Advance(Duration{500});
  EXPECT_EQ(clock.Now(), Timestamp{Duration{1500}});
  clock.Set(Timestamp{Duration{7}});
  EXPECT_EQ(clock.Now(), Timestamp{Duration{7}});
}

// A wait on the manual clock ends when the clock reaches its deadline, and
// not before: the waiting thread reports each wake-up, and the test moves the
// clock only after the waiter is registered (it has reported "waiting").
TEST(Time, ManualClockWaitEndsWhenTheClockReachesTheDeadline) {
  ManualClock clock(Timestamp{Duration{0}});
  std::mutex mu;
  std::condition_variable cv;
  bool waiting = false, done = false, result = true;
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    waiting = true;
    cv.notify_all();
    result = clock.WaitUntil(lock, cv, Timestamp{Duration{100}}, [] { return false; });
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return waiting; }));
  lock.unlock();
  clock.Advance(Duration{99});  // the waiter wakes, sees 99 < 100, waits on
  lock.lock();
  EXPECT_FALSE(done);
  lock.unlock();
  clock.Advance(Duration{1});
  lock.lock();
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; }));
  EXPECT_FALSE(result);  // the deadline, not readiness, ended it
  lock.unlock();
  waiter.join();
}

TEST(Time, ClockWaitEndsWhenReadyWithoutADeadline) {
  for (bool manual : {true, false}) {
    ManualClock manual_clock;
    SystemClock system_clock;
    const Clock& clock = manual ? static_cast<const Clock&>(manual_clock) : system_clock;
    std::mutex mu;
    std::condition_variable cv;
    bool ready = false;
    std::thread setter([&] {
      std::lock_guard lock(mu);
      ready = true;
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    EXPECT_TRUE(clock.WaitUntil(lock, cv, std::nullopt, [&] { return ready; }));
    lock.unlock();
    setter.join();
  }
}

TEST(Time, SystemClockWaitEndsAtAPastDeadlineAtOnce) {
  SystemClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_FALSE(clock.WaitUntil(lock, cv, clock.Now() - Duration{1}, [] { return false; }));
}

// Docker's flag values, read as Go reads them, and written back shortest.
TEST(Time, DurationsReadAsDockersFlagsAndFormatShortest) {
  const std::pair<const char*, int64_t> read[] = {
      {"0", 0},        {"0s", 0},         {"500ms", 500},    {"5s", 5'000},
      {"1.5s", 1'500}, {"1m30s", 90'000}, {"2h", 7'200'000}, {"1h0m5s", 3'605'000}};
  for (const auto& [text, ms] : read) {
    Result<Duration> d = ParseDuration(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status().message();
    EXPECT_EQ(d->count(), ms) << text;
  }
  for (const char* bad : {"", "5", "s", "-1s", "5x", "1..5s", "5 s", "1000000h"})
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  EXPECT_EQ(FormatDuration(Duration{0}), "0s");
  EXPECT_EQ(FormatDuration(Duration{250}), "250ms");
  EXPECT_EQ(FormatDuration(Duration{5'000}), "5s");
  EXPECT_EQ(FormatDuration(Duration{1'500}), "1.5s");
  EXPECT_EQ(FormatDuration(Duration{90'000}), "1m30s");
  EXPECT_EQ(FormatDuration(Duration{7'205'000}), "2h0m5s");
  for (int64_t ms : {1, 999, 1'000, 61'001, 86'400'000})
    EXPECT_EQ(ParseDuration(FormatDuration(Duration{ms}))->count(), ms);
}

}  // namespace
}  // namespace berth
