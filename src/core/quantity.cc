#include "core/quantity.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "core/names.h"

namespace berth {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A non-negative decimal "123.456" split into its integer and fraction digits.
struct Decimal {
  std::string_view whole;
  std::string_view fraction;
};

bool SplitDecimal(std::string_view text, Decimal* out) {
  size_t dot = text.find('.');
  out->whole = text.substr(0, dot);
  out->fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (out->whole.empty() && out->fraction.empty()) return false;
  if (dot != std::string_view::npos && out->fraction.empty()) return false;
  for (char c : out->whole)
    if (c < '0' || c > '9') return false;
  for (char c : out->fraction)
    if (c < '0' || c > '9') return false;
  return true;
}

// value = decimal * unit, exactly; false when not whole or out of range.
bool ScaleExact(const Decimal& d, int64_t unit, int64_t* value) {
  __int128 whole = 0;
  for (char c : d.whole) {
    whole = whole * 10 + (c - '0');
    if (whole > kMax) return false;
  }
  __int128 frac_num = 0, frac_den = 1;
  for (char c : d.fraction) {
    frac_num = frac_num * 10 + (c - '0');
    frac_den *= 10;
    if (frac_den > kMax) return false;
  }
  __int128 scaled_frac = frac_num * unit;
  if (scaled_frac % frac_den != 0) return false;
  __int128 total = whole * unit + scaled_frac / frac_den;
  if (total > kMax) return false;
  *value = static_cast<int64_t>(total);
  return true;
}

// The shortest text that reads back as `value` ("1.2345", "1e+300"), as the
// user would have written it, not std::to_string's "1.234500".
std::string Shortest(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

}  // namespace

Result<int64_t> ParseMilliCpu(std::string_view text) {
  std::string_view number = text;
  int64_t unit = 1000;
  if (!number.empty() && number.back() == 'm') {
    number.remove_suffix(1);
    unit = 1;
  }
  Decimal d;
  int64_t value = 0;
  if (!SplitDecimal(number, &d) || !ScaleExact(d, unit, &value))
    return Status::InvalidArgument("invalid cpu quantity " + Quoted(text) +
                                   " (expected CPUs like 0.5, or milli-CPUs like 500m)");
  return value;
}

Result<int64_t> MilliCpuFromNumber(double cpus) {
  double milli = cpus * 1000.0;
  double rounded = std::round(milli);
  if (!std::isfinite(cpus) || cpus < 0 || rounded > 9.2e18 || std::fabs(milli - rounded) > 1e-6)
    return Status::InvalidArgument("invalid cpu quantity " + Shortest(cpus) +
                                   " (expected a non-negative number with at most 3 decimals)");
  return static_cast<int64_t>(rounded);
}

Result<int64_t> ParseBytes(std::string_view text) {
  struct Suffix {
    std::string_view name;
    int64_t unit;
  };
  static constexpr Suffix kSuffixes[] = {
      {"Ki", 1LL << 10}, {"Mi", 1LL << 20},  {"Gi", 1LL << 30},   {"Ti", 1LL << 40},
      {"k", 1000},       {"M", 1000 * 1000}, {"G", 1000000000LL}, {"T", 1000000000000LL},
  };
  std::string_view number = text;
  int64_t unit = 1;
  for (const Suffix& s : kSuffixes) {
    if (number.size() > s.name.size() && number.ends_with(s.name)) {
      number.remove_suffix(s.name.size());
      unit = s.unit;
      break;
    }
  }
  Decimal d;
  int64_t value = 0;
  if (!SplitDecimal(number, &d) || !ScaleExact(d, unit, &value))
    return Status::InvalidArgument(
        "invalid memory quantity " + Quoted(text) +
        " (expected whole bytes, optionally with a suffix k, M, G, T, Ki, Mi, Gi or Ti)");
  return value;
}

Result<int64_t> BytesFromNumber(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 9.2e18 || std::floor(bytes) != bytes)
    return Status::InvalidArgument("invalid memory quantity " + Shortest(bytes) +
                                   " (expected a non-negative whole number of bytes)");
  return static_cast<int64_t>(bytes);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int unit = -1;
  double scaled = static_cast<double>(bytes);
  while (unit + 1 < 6 && scaled >= 1024) {
    scaled /= 1024;
    ++unit;
  }
  if (unit < 0) return std::to_string(bytes);
  const bool exact = bytes % (int64_t{1} << (10 * (unit + 1))) == 0;
  char text[32];
  std::snprintf(text, sizeof text, exact ? "%.0f%s" : "%.1f%s", scaled, kUnits[unit]);
  return text;
}

}  // namespace berth
