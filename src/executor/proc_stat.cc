#include "executor/proc_stat.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace berth::executor {

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string text(buf, static_cast<size_t>(n));
  // Field 2 is the command name in parentheses and may itself hold spaces
  // and ')': the fields that follow start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  ProcStat stat;
  size_t pos = close + 1;
  for (int field = 3; field <= 22; ++field) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos >= text.size()) return std::nullopt;
    const size_t end = text.find(' ', pos);
    const std::string value = text.substr(pos, end == std::string::npos ? end : end - pos);
    if (field == 3) stat.state = value[0];
    if (field == 4) stat.parent = static_cast<pid_t>(std::atoi(value.c_str()));
    if (field == 22) {
      char* rest = nullptr;
      stat.start_time = std::strtoull(value.c_str(), &rest, 10);
      if (rest == value.c_str() || *rest != '\0') return std::nullopt;
    }
    pos = end;
  }
  return stat;
}

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  if (!stat) return std::nullopt;
  return stat->start_time;
}

bool IsSameLiveProcess(pid_t pid, uint64_t start_time) {
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat && stat->start_time == start_time && stat->state != 'Z' && stat->state != 'X';
}

}  // namespace berth::executor
