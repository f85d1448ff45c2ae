#include "cli/output.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "core/quantity.h"

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
  return FormatBytes(bytes);
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

// One word of a command line as a shell would need it.
static std::string ShellWord(const std::string& word) {
  if (!word.empty() && word.find_first_of(" \t'\"\\$`") == std::string::npos) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string CommandText(const Json& task) {
  if (!task.contains("command")) return "none (simulated)";
  std::string line = ShellWord(Text(task["command"]));
  for (const Json& arg : task.value("args", Json::array())) line += " " + ShellWord(Text(arg));
  return line;
}

}  // namespace berth::cli
