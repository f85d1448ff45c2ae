#include "executor/task_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace berth::executor {
namespace {

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Splits off the text up to the next `sep` (all of it when there is none).
std::string_view NextField(std::string_view* text, char sep) {
  const size_t at = text->find(sep);
  const std::string_view field = text->substr(0, at);
  text->remove_prefix(at == std::string_view::npos ? text->size() : at + 1);
  return field;
}

}  // namespace

std::string FormatPidRecord(const PidRecord& r) {
  return std::to_string(r.task_pid) + " " + std::to_string(r.task_start_time) + " " +
         std::to_string(r.shim_pid) + " " + std::to_string(r.shim_start_time) + "\n";
}

std::optional<PidRecord> ParsePidRecord(std::string_view text) {
  std::string_view line = NextField(&text, '\n');
  PidRecord r;
  if (!ParseNumber(NextField(&line, ' '), &r.task_pid) ||
      !ParseNumber(NextField(&line, ' '), &r.task_start_time) ||
      !ParseNumber(NextField(&line, ' '), &r.shim_pid) ||
      !ParseNumber(NextField(&line, ' '), &r.shim_start_time) || !line.empty() || r.task_pid <= 0 ||
      r.shim_pid <= 0) {
    return std::nullopt;
  }
  return r;
}

std::string FormatExitRecord(const ExitRecord& r) {
  std::string out;
  if (r.exit_code) out += "exit_code " + std::to_string(*r.exit_code) + "\n";
  if (r.signal) out += "signal " + std::to_string(*r.signal) + "\n";
  if (r.rejected) {
    std::string why = *r.rejected;
    for (char& c : why) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    out += "rejected " + why + "\n";
  }
  if (r.stopped) out += "stopped 1\n";
  if (r.oom_limit) out += "oom_killed " + std::to_string(*r.oom_limit) + "\n";
  if (r.started_at_ms) out += "started_at_ms " + std::to_string(r.started_at_ms) + "\n";
  if (r.finished_at_ms) out += "finished_at_ms " + std::to_string(r.finished_at_ms) + "\n";
  return out;
}

std::optional<ExitRecord> ParseExitRecord(std::string_view text) {
  ExitRecord r;
  // Kept aside until the end: GCC 12 with the sanitizers sees an
  // uninitialised string in an early return after an emplace into
  // r.rejected (-Wmaybe-uninitialized).
  std::optional<std::string_view> rejected;
  int outcomes = 0;
  while (!text.empty()) {
    std::string_view value = NextField(&text, '\n');
    const std::string_view key = NextField(&value, ' ');
    bool ok = true;
    if (key == "exit_code") {
      ok = ParseNumber(value, &r.exit_code.emplace());
      ++outcomes;
    } else if (key == "signal") {
      ok = ParseNumber(value, &r.signal.emplace());
      ++outcomes;
    } else if (key == "rejected") {
      rejected = value;
      ++outcomes;
    } else if (key == "stopped") {
      r.stopped = value == "1";
    } else if (key == "oom_killed") {
      ok = ParseNumber(value, &r.oom_limit.emplace());
    } else if (key == "started_at_ms") {
      ok = ParseNumber(value, &r.started_at_ms);
    } else if (key == "finished_at_ms") {
      ok = ParseNumber(value, &r.finished_at_ms);
    }
    if (!ok) return std::nullopt;
  }
  if (outcomes != 1) return std::nullopt;
  if (rejected) r.rejected = std::string(*rejected);
  return r;
}

std::string FormatEnvFile(const std::vector<std::string>& entries) {
  std::string text;
  for (const std::string& entry : entries) {
    text += entry;
    text += '\0';
  }
  return text;
}

std::optional<std::vector<std::string>> ParseEnvFile(std::string_view text) {
  std::vector<std::string> entries;
  while (!text.empty()) {
    const size_t end = text.find('\0');
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view entry = text.substr(0, end);
    const size_t equals = entry.find('=');
    if (equals == 0 || equals == std::string_view::npos) return std::nullopt;
    entries.emplace_back(entry);
    text.remove_prefix(end + 1);
  }
  return entries;
}

Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode) {
  const std::string temp = path + ".tmp";
  ::unlink(temp.c_str());  // a leftover keeps its mode: make it anew
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Status::Internal("cannot create " + temp + ": " + std::strerror(errno));
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status error = Status::Internal("cannot write " + temp + ": " + std::strerror(errno));
      ::close(fd);
      return error;
    }
    content.remove_prefix(static_cast<size_t>(n));
  }
  // Synced before the rename, so a machine that crashes leaves the old
  // file or the whole new one, never an empty one by the final name.
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return Status::Internal("cannot sync " + temp + ": " + std::strerror(errno));
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    return Status::Internal("cannot rename " + temp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      if (n < 0) return std::nullopt;
      return content;
    }
    content.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace berth::executor
