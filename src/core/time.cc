#include "core/time.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>

namespace berth {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

// Reads exactly `width` digits at text[pos]; returns -1 when they are not digits.
int ReadDigits(std::string_view text, size_t pos, int width) {
  if (pos + width > text.size()) return -1;
  int value = 0;
  for (int i = 0; i < width; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

Status Invalid(std::string_view text) {
  return Status::InvalidArgument("invalid time '" + std::string(text) +
                                 "' (expected RFC 3339, like 2026-01-01T00:10:00Z)");
}

}  // namespace

Timestamp SystemClock::Now() const {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

bool SystemClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            std::optional<Timestamp> deadline,
                            const std::function<bool()>& ready) const {
  if (!deadline) {
    cv.wait(lock, ready);
    return true;
  }
  // Waits in steady time, so a jump of the wall clock cannot stretch a wait.
  while (!ready()) {
    const Duration left = *deadline - Now();
    if (left <= Duration::zero()) return false;
    cv.wait_for(lock, left);
  }
  return true;
}

bool ManualClock::WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            std::optional<Timestamp> deadline,
                            const std::function<bool()>& ready) const {
  const Waiter me{lock.mutex(), &cv};
  {
    std::lock_guard guard(waiters_mu_);
    waiters_.push_back(me);
  }
  while (!ready() && !(deadline && Now() >= *deadline)) cv.wait(lock);
  std::lock_guard guard(waiters_mu_);
  // One entry: another thread may wait on the same mutex and cv.
  waiters_.erase(std::find_if(waiters_.begin(), waiters_.end(), [&](const Waiter& w) {
    return w.mutex == me.mutex && w.cv == me.cv;
  }));
  return ready();
}

void ManualClock::Set(Timestamp t) {
  now_.store(t.time_since_epoch().count());
  WakeWaiters();
}

void ManualClock::Advance(Duration d) {
  now_.fetch_add(d.count());
  WakeWaiters();
}

// Taking each waiter's mutex once after the time changed means a waiter is
// either still before its check (and sees the new time) or inside cv.wait
// (and gets the notification): no wake-up is lost.
void ManualClock::WakeWaiters() {
  std::vector<Waiter> waiters;
  {
    std::lock_guard guard(waiters_mu_);
    waiters = waiters_;
  }
  for (const Waiter& w : waiters) {
    { std::lock_guard guard(*w.mutex); }
    w.cv->notify_all();
  }
}

Result<Timestamp> ParseRfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[13] != ':' || text[16] != ':')
    return Invalid(text);
  if (text[10] != 'T' && text[10] != 't' && text[10] != ' ') return Invalid(text);
  int year = ReadDigits(text, 0, 4), month = ReadDigits(text, 5, 2), day = ReadDigits(text, 8, 2);
  int hour = ReadDigits(text, 11, 2), minute = ReadDigits(text, 14, 2),
      second = ReadDigits(text, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60)
    return Invalid(text);
  if (day > DaysInMonth(year, month)) return Invalid(text);
  size_t pos = 19;
  int64_t millis = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 3) millis = millis * 10 + (text[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return Invalid(text);
    for (int i = digits; i < 3; ++i) millis *= 10;
  }
  int64_t offset_minutes = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    int oh = ReadDigits(text, pos + 1, 2), om = ReadDigits(text, pos + 4, 2);
    if (oh < 0 || om < 0 || pos + 3 >= text.size() || text[pos + 3] != ':' || oh > 23 || om > 59)
      return Invalid(text);
    offset_minutes = sign * (oh * 60 + om);
    pos += 6;
  } else {
    return Invalid(text);
  }
  if (pos != text.size()) return Invalid(text);
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  int64_t seconds = static_cast<int64_t>(timegm(&tm)) - offset_minutes * 60;
  return Timestamp{Duration{seconds * 1000 + millis}};
}

namespace {

// Years outside 0000-9999, which RFC 3339 cannot write: as the C library
// formats them.
std::string FormatWithGmtime(int64_t ms) {
  const int64_t seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  const int64_t millis = ms - seconds * 1000;
  const std::time_t tt = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

}  // namespace

// Written by hand rather than with gmtime_r and snprintf: a pass formats
// two timestamps for every task it writes, so this is on the hot path.
std::string FormatRfc3339(Timestamp t) {
  const int64_t ms = t.time_since_epoch().count();
  const int64_t days = ms >= 0 ? ms / 86'400'000 : (ms - 86'399'999) / 86'400'000;
  const int64_t in_day = ms - days * 86'400'000;
  // Civil date from days since 1970-01-01 (H. Hinnant's civil_from_days).
  const int64_t z = days + 719'468;
  const int64_t era = (z >= 0 ? z : z - 146'096) / 146'097;
  const int64_t doe = z - era * 146'097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  char buf[32];
  char* p = buf;
  auto put = [&p](int64_t value, int width) {
    for (int i = width - 1; i >= 0; --i, value /= 10) p[i] = static_cast<char>('0' + value % 10);
    p += width;
  };
  if (year < 0 || year > 9999) return FormatWithGmtime(ms);
  put(year, 4);
  *p++ = '-';
  put(month, 2);
  *p++ = '-';
  put(day, 2);
  *p++ = 'T';
  put(in_day / 3'600'000, 2);
  *p++ = ':';
  put(in_day / 60'000 % 60, 2);
  *p++ = ':';
  put(in_day / 1000 % 60, 2);
  if (const int64_t millis = in_day % 1000; millis != 0) {
    *p++ = '.';
    put(millis, 3);
  }
  *p++ = 'Z';
  return std::string(buf, p);
}

Result<Duration> ParseDuration(std::string_view text) {
  auto refuse = [&] {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a duration (expected e.g. 500ms, 5s, 1m30s, 2h)");
  };
  if (text == "0") return Duration{0};
  if (text.empty()) return refuse();
  constexpr double kMaxMs = 100.0 * 365 * 24 * 3600 * 1000;
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t number_at = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (i == number_at || i == text.size()) return refuse();
    double value = 0;
    if (auto [end, ec] = std::from_chars(text.data() + number_at, text.data() + i, value);
        ec != std::errc() || end != text.data() + i)
      return refuse();
    const size_t unit_at = i;
    while (i < text.size() && !(text[i] >= '0' && text[i] <= '9') && text[i] != '.') ++i;
    const std::string_view unit = text.substr(unit_at, i - unit_at);
    const double scale = unit == "ms"  ? 1
                         : unit == "s" ? 1e3
                         : unit == "m" ? 6e4
                         : unit == "h" ? 3.6e6
                                       : -1;
    if (scale < 0) return refuse();
    total_ms += value * scale;
    if (total_ms > kMaxMs) return refuse();
  }
  return Duration{static_cast<int64_t>(total_ms + 0.5)};
}

std::string FormatDuration(Duration d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  if (ms < 1000) return std::to_string(ms) + "ms";
  std::string out;
  if (ms >= 3'600'000) out += std::to_string(ms / 3'600'000) + "h";
  if (ms >= 60'000) out += std::to_string(ms / 60'000 % 60) + "m";
  const int64_t seconds = ms / 1000 % 60, millis = ms % 1000;
  out += std::to_string(seconds);
  if (millis != 0) {
    std::string fraction = std::to_string(1000 + millis).substr(1);
    while (fraction.back() == '0') fraction.pop_back();
    out += "." + fraction;
  }
  return out + "s";
}

}  // namespace berth
