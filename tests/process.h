// Process: runs a program for an integration test, with its standard output
// (and, when asked, its standard error) on a pipe, so the test can wait for a
// line it prints or for its exit (each with a bound) and kill it at a chosen
// moment. Tests only; not thread-safe.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace berth::testing_support {

class Process {
 public:
  enum class Stderr { kInherit, kMerge };
  explicit Process(const std::vector<std::string>& argv, Stderr stderr_to = Stderr::kInherit) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      if (stderr_to == Stderr::kMerge) dup2(fds[1], STDERR_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
  }
  ~Process() {
    Kill(SIGKILL);
    if (out_ >= 0) close(out_);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // The next line of standard output containing `needle`, or "" when the
  // process ends or `timeout` passes first.
  std::string WaitForLine(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (line.find(needle) != std::string::npos) return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
      char chunk[4096];
      const ssize_t n = read(out_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Everything the process writes until it closes its output (it exits), and
  // its wait status; -1 (and the process killed) when `timeout` passes first.
  struct Exit {
    int status = -1;
    std::string output;
  };
  Exit WaitExit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Exit exit;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{out_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        Kill(SIGKILL);
        exit.output = std::move(buffer_);
        return exit;
      }
      char chunk[4096];
      const ssize_t n = read(out_, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
    exit.output = std::move(buffer_);
    if (pid_ > 0) waitpid(pid_, &exit.status, 0);
    pid_ = -1;
    return exit;
  }

  // Its pid (-1 once reaped).
  pid_t pid() const { return pid_; }

  // Sends `signal` (SIGSTOP, SIGCONT) without waiting.
  void Signal(int signal) {
    if (pid_ > 0) kill(pid_, signal);
  }
  // Whether it still runs (an ended process is reaped).
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    pid_ = -1;
    return false;
  }

  // Sends `signal` and reaps the process; returns its wait status (-1 if it
  // was not running).
  int Kill(int signal) {
    if (pid_ <= 0) return -1;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffer_;
};

// The tasks a node's data directory holds, and which of them still run
// (no exit file).
inline std::set<std::string> TaskDirs(const std::string& data_dir, bool running_only) {
  std::set<std::string> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir + "/tasks", ec))
    if (!running_only || !std::filesystem::exists(entry.path() / "exit"))
      ids.insert(entry.path().filename());
  return ids;
}

// Polls `done` until it holds or `bound` passes; the polling interval is
// the wait's granularity, not a guess at how long something takes.
inline bool Eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds bound = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The port of a server's start-up line, "... listening on [http://]HOST:PORT
// (...)", or "" when the line has none.
inline std::string PortInLine(const std::string& line) {
  const size_t colon = line.rfind(':');
  if (colon == std::string::npos) return "";
  return line.substr(colon + 1, line.find(' ', colon) - colon - 1);
}

// /proc/PID/NAME's first 64 KiB, "" when the process is gone. read(2), not
// a stream: a process that ends while its file is read makes the read fail
// (ESRCH), which libstdc++'s filebuf throws on.
inline std::string ReadProcFile(pid_t pid, const char* name) {
  std::string text;
  const std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  for (ssize_t n; text.size() < 65536 && (n = ::read(fd, buffer, sizeof buffer)) > 0;) {
    text.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

// Whether `pid` is gone or a zombie (a supervisor whose berth-node died is
// reaped by whoever adopted it, maybe not at once).
inline bool Ended(pid_t pid) {
  const std::string stat = ReadProcFile(pid, "stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z';
}

// The supervisors (berth-exec shims) running for a berth-node's data
// directory, found by their command line ("--dir DATA/tasks/ID"): one still
// starting has not written its task's pid file yet.
inline std::vector<std::pair<pid_t, std::string>> ShimsOf(const std::string& node_data_dir) {
  std::vector<std::pair<pid_t, std::string>> shims;
  const std::string prefix = node_data_dir + "/tasks/";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream in(ReadProcFile(std::stoi(name), "cmdline"));
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--dir" && argv[i + 1].starts_with(prefix)) {
        shims.emplace_back(std::stoi(name), argv[i + 1]);
        break;
      }
    }
  }
  return shims;
}

// Kills every task of a berth-node's data directory: tasks outlive their
// berth-node by design. A task whose supervisor wrote its pid file is
// killed (its process group), and the supervisor then ends as it does when
// its task ends, killing what is left in the task's cgroups and removing
// them; a supervisor still starting is asked to stop (SIGTERM), which it
// does once its task runs. One still there after `bound` (all tasks
// together) is killed, which leaves its cgroups behind.
inline void KillTasksOf(const std::string& node_data_dir,
                        std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  std::set<pid_t> signalled;
  while (true) {
    std::vector<std::pair<pid_t, std::string>> shims = ShimsOf(node_data_dir);
    std::erase_if(shims, [](const auto& shim) { return Ended(shim.first); });
    if (shims.empty()) return;
    const bool late = std::chrono::steady_clock::now() >= deadline;
    for (const auto& [shim, dir] : shims) {
      if (late) {
        kill(shim, SIGKILL);
        continue;
      }
      if (signalled.contains(shim)) continue;
      std::ifstream in(dir + "/pid");
      pid_t task = 0, recorded_shim = 0;
      uint64_t start = 0;
      if (in >> task >> start >> recorded_shim && recorded_shim == shim) {
        kill(-task, SIGKILL);
      } else {
        kill(shim, SIGTERM);
      }
      signalled.insert(shim);
    }
    if (late) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The first line of a file (a data directory's API token), or "".
inline std::string FirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

}  // namespace berth::testing_support
