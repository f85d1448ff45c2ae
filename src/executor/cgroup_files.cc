#include "executor/cgroup_files.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <filesystem>
#include <sstream>

#include "executor/proc_stat.h"
#include "executor/task_dir.h"

namespace berth::executor {
namespace {

// The next line of `rest`, which loses it.
std::string_view NextLine(std::string_view* rest) {
  const size_t end = rest->find('\n');
  const std::string_view line = rest->substr(0, end);
  rest->remove_prefix(end == std::string_view::npos ? rest->size() : end + 1);
  return line;
}

// The controllers of cgroup v1, as its mount options name them.
bool IsV1Controller(std::string_view option) {
  static constexpr std::string_view kControllers[] = {
      "cpu",        "cpuacct",  "cpuset",  "memory", "devices", "freezer", "net_cls",
      "perf_event", "net_prio", "hugetlb", "pids",   "rdma",    "misc",    "blkio"};
  return std::find(std::begin(kControllers), std::end(kControllers), option) !=
         std::end(kControllers);
}

constexpr std::string_view kHolderPrefix = "shim-";

// Whether `name` is a holder (HolderName) of a process that lives.
bool IsLiveHolder(std::string_view name) {
  if (!name.starts_with(kHolderPrefix)) return false;
  name.remove_prefix(kHolderPrefix.size());
  pid_t pid = 0;
  uint64_t start_time = 0;
  const char* end = name.data() + name.size();
  const auto [dash, pid_error] = std::from_chars(name.data(), end, pid);
  if (pid_error != std::errc() || dash == end || *dash != '-') return false;
  const auto [last, time_error] = std::from_chars(dash + 1, end, start_time);
  return time_error == std::errc() && last == end && IsSameLiveProcess(pid, start_time);
}

}  // namespace

std::string HolderName(pid_t pid, uint64_t start_time) {
  return std::string(kHolderPrefix) + std::to_string(pid) + "-" + std::to_string(start_time);
}

bool RemoveDeadHolders(const std::string& group) {
  namespace fs = std::filesystem;
  bool held = false;
  std::error_code error;
  for (fs::directory_iterator it(group, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with(kHolderPrefix) || !it->is_directory(error)) continue;
    if (IsLiveHolder(name)) {
      held = true;
    } else {
      ::rmdir(it->path().c_str());
    }
  }
  return held;
}

void RemoveStaleTaskCgroups(const std::string& parent) {
  namespace fs = std::filesystem;
  std::error_code error;
  for (fs::directory_iterator it(parent, error), end; !error && it != end; it.increment(error)) {
    if (!it->path().filename().string().starts_with("task-") || !it->is_directory(error)) continue;
    if (!RemoveDeadHolders(it->path().string())) ::rmdir(it->path().c_str());
  }
}

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
    const std::string_view line = NextLine(&rest);
    pid_t pid = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec == std::errc() && ptr == line.data() + line.size() && pid > 0) pids.push_back(pid);
  }
  return pids;
}

// A line of /proc/mounts: "<source> <mount point> <type> <options> 0 0".
std::map<std::string, std::string> CgroupV1Mounts(std::string_view text) {
  std::map<std::string, std::string> mounts;
  while (!text.empty()) {
    std::istringstream line{std::string(NextLine(&text))};
    std::string source, point, type, options;
    if (!(line >> source >> point >> type >> options) || type != "cgroup") continue;
    std::string_view rest = options;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view option = rest.substr(0, comma);
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
      if (!IsV1Controller(option)) continue;  // a mount option (rw, relatime, name=...)
      mounts.emplace(std::string(option), point);
    }
  }
  return mounts;
}

void KillCgroupProcs(const std::string& dir) {
  std::vector<std::pair<pid_t, int>> pidfds;
  for (pid_t pid : CgroupProcs(dir)) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0 || errno == ENOSYS) pidfds.emplace_back(pid, fd);
  }
  const std::vector<pid_t> listed = CgroupProcs(dir);
  for (const auto& [pid, fd] : pidfds) {
    if (std::find(listed.begin(), listed.end(), pid) != listed.end()) {
      if (fd >= 0) {
        ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
      } else {
        ::kill(pid, SIGKILL);  // a kernel before 5.3, without pidfds
      }
    }
    if (fd >= 0) ::close(fd);
  }
}

std::optional<int64_t> CgroupStat(const std::string& file, std::string_view key) {
  const std::optional<std::string> text = ReadSmallFile(file);
  if (!text) return std::nullopt;
  std::string_view rest = *text;
  while (!rest.empty()) {
    const std::string_view line = NextLine(&rest);
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ' ') continue;
    const std::string_view value = line.substr(key.size() + 1);
    int64_t number = 0;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec == std::errc()) return number;
  }
  return std::nullopt;
}

}  // namespace berth::executor
