#include "executor/cgroup_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "executor/task_dir.h"

namespace berth::executor {

int WriteCgroupFile(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n;
  while ((n = ::write(fd, text.data(), text.size())) < 0 && errno == EINTR) {
  }
  const int error = n < 0 ? errno : (static_cast<size_t>(n) == text.size() ? 0 : EIO);
  ::close(fd);
  return error;
}

std::vector<pid_t> CgroupProcs(const std::string& dir) {
  std::vector<pid_t> pids;
  const std::string text = ReadSmallFile(dir + "/cgroup.procs").value_or("");
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    pid_t pid = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec == std::errc() && ptr == line.data() + line.size() && pid > 0) pids.push_back(pid);
  }
  return pids;
}

}  // namespace berth::executor
