#include "cli/output.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace berth::cli {

using api::Json;

void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) width[c] = headers[c].size();
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c)
      text += c + 1 == cells.size() ? cells[c]
                                    : cells[c] + std::string(width[c] - cells[c].size() + 2, ' ');
    out << text << "\n";
  };
  line(headers);
  for (const auto& row : rows) line(row);
}

std::string Text(const Json& value) {
  if (value.is_null()) return "-";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string FormatMemory(const Json& value) {
  int64_t bytes = 0;
  if (!api::ReadBytes(value, "memory", &bytes).ok()) return Text(value);
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

std::string FormatCpu(const Json& value) {
  int64_t milli = 0;
  if (!api::ReadMilliCpu(value, "cpu", &milli).ok()) return Text(value);
  std::string text = std::to_string(milli / 1000);
  if (const int64_t fraction = milli % 1000; fraction != 0) {
    char digits[8];
    std::snprintf(digits, sizeof digits, ".%03lld", static_cast<long long>(fraction));
    text += digits;
    text.erase(text.find_last_not_of('0') + 1);  // "0.500" -> "0.5"
  }
  return text;
}

std::string Cut(std::string text, size_t limit) {
  if (text.size() > limit) text = text.substr(0, limit - 3) + "...";
  return text;
}

}  // namespace berth::cli
