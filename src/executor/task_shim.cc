#include "executor/task_shim.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/time.h"
#include "executor/cgroup_files.h"
#include "executor/log_files.h"
#include "executor/proc_stat.h"
#include "executor/task_dir.h"

namespace berth::executor {
namespace {

constexpr char kUsage[] =
    "usage: berth-exec --dir DIR [--grace-ms N] [--workdir W] [--env-file FILE]\n"
    "                  [--log-max-bytes N] [--log-max-files N]\n"
    "                  [(--cgroup DIR | --cgroup-v1 CONTROLLER=DIR...)\n"
    "                   [--cpu-max \"QUOTA PERIOD\"] [--memory-max BYTES] [--pids-max N]]\n"
    "                  -- COMMAND [ARG]...\n";

// After the task's process exited: how long the shim spends killing what
// is left of the task, and then reading the output still in the pipes.
constexpr int64_t kLeftoverBoundNs = 2'000'000'000;
constexpr int64_t kDrainBoundNs = 1'000'000'000;

// Bounds that keep the arithmetic on them from overflowing: a year, and
// more files than anyone keeps.
constexpr int64_t kMaxGraceMs = 365LL * 24 * 3600 * 1000;
constexpr int kMaxLogFiles = 10'000;
// pids.max's bound: Linux's PID_MAX_LIMIT, the most pids a machine has.
constexpr int64_t kMaxPids = 4 * 1024 * 1024;

// cpu.max's bounds, in microseconds: the kernel's for the period and its
// minimum quota; ten million cores' worth at most.
constexpr int64_t kMinCpuQuotaUs = 1000;
constexpr int64_t kMaxCpuQuotaUs = 1'000'000'000'000;
constexpr int64_t kMinCpuPeriodUs = 1000;
constexpr int64_t kMaxCpuPeriodUs = 1'000'000;

// Removing the task's cgroup once it is empty: tries, and the wait between.
constexpr int kCgroupRemoveTries = 20;
constexpr int kCgroupRemoveWaitMs = 25;

struct ShimArgs {
  std::string dir;
  int64_t grace_ms = 10'000;
  std::string workdir;           // "": the shim's own
  std::string env_file;          // "": none
  std::vector<std::string> env;  // read from env_file
  LogWriterOptions log;
  std::string cgroup;  // "": none
  // cgroup v1: the task's directory in each hierarchy, by controller.
  std::map<std::string, std::string> cgroup_v1;
  std::optional<std::string> cpu_max;
  std::optional<int64_t> memory_max;
  std::optional<int64_t> pids_max;
  std::vector<std::string> command;
};

constexpr std::string_view kFlags[] = {
    "--dir",    "--grace-ms",  "--workdir", "--env-file",   "--log-max-bytes", "--log-max-files",
    "--cgroup", "--cgroup-v1", "--cpu-max", "--memory-max", "--pids-max"};

// The cgroup v1 controllers the shim puts a task in: those its limits
// need, and cpuacct, which measures its CPU time.
constexpr std::string_view kV1Controllers[] = {"memory", "cpu", "cpuacct", "pids"};

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// "QUOTA PERIOD" as cpu.max takes it, QUOTA a number of microseconds or
// "max".
bool IsCpuMax(std::string_view value) {
  const size_t space = value.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view quota = value.substr(0, space);
  int64_t quota_us = 0, period_us = 0;
  return (quota == "max" || (ParseNumber(quota, &quota_us) && quota_us >= kMinCpuQuotaUs &&
                             quota_us <= kMaxCpuQuotaUs)) &&
         ParseNumber(value.substr(space + 1), &period_us) && period_us >= kMinCpuPeriodUs &&
         period_us <= kMaxCpuPeriodUs;
}

Status ParseFlag(std::string_view flag, std::string_view value, ShimArgs* args) {
  const auto number = [&](auto* out, int64_t min, int64_t max) {
    if (!ParseNumber(value, out) || *out < min || *out > max) {
      return Status::InvalidArgument(std::string(flag) + " takes a whole number from " +
                                     std::to_string(min) + " to " + std::to_string(max) +
                                     ", not '" + std::string(value) + "'");
    }
    return Status::Ok();
  };
  if (flag == "--dir") {
    args->dir = value;
  } else if (flag == "--workdir") {
    args->workdir = value;
  } else if (flag == "--env-file") {
    args->env_file = value;
  } else if (flag == "--cgroup") {
    if (!value.starts_with('/')) {
      return Status::InvalidArgument("--cgroup takes an absolute directory, not '" +
                                     std::string(value) + "'");
    }
    args->cgroup = value;
  } else if (flag == "--cgroup-v1") {
    const size_t equals = value.find('=');
    const std::string_view controller = value.substr(0, equals);
    if (equals == std::string_view::npos ||
        std::find(std::begin(kV1Controllers), std::end(kV1Controllers), controller) ==
            std::end(kV1Controllers) ||
        !value.substr(equals + 1).starts_with('/')) {
      return Status::InvalidArgument(
          "--cgroup-v1 takes CONTROLLER=DIR (memory, cpu, cpuacct or pids; DIR absolute), not '" +
          std::string(value) + "'");
    }
    args->cgroup_v1[std::string(controller)] = value.substr(equals + 1);
  } else if (flag == "--cpu-max") {
    if (!IsCpuMax(value)) {
      return Status::InvalidArgument(
          "--cpu-max takes \"QUOTA PERIOD\" in microseconds (QUOTA from " +
          std::to_string(kMinCpuQuotaUs) + " to " + std::to_string(kMaxCpuQuotaUs) +
          " or max, PERIOD from " + std::to_string(kMinCpuPeriodUs) + " to " +
          std::to_string(kMaxCpuPeriodUs) + "), not '" + std::string(value) + "'");
    }
    args->cpu_max = value;
  } else if (flag == "--memory-max") {
    return number(&args->memory_max.emplace(), 1, INT64_MAX);
  } else if (flag == "--pids-max") {
    return number(&args->pids_max.emplace(), 1, kMaxPids);
  } else if (flag == "--grace-ms") {
    return number(&args->grace_ms, 0, kMaxGraceMs);
  } else if (flag == "--log-max-bytes") {
    return number(&args->log.max_bytes, 1, INT64_MAX);
  } else {  // --log-max-files
    return number(&args->log.max_files, 1, kMaxLogFiles);
  }
  return Status::Ok();
}

Result<ShimArgs> ParseArgs(int argc, char** argv) {
  ShimArgs args;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--") break;
    if (!flag.starts_with("--")) {
      return Status::InvalidArgument("expected a flag or '--', not '" + std::string(flag) + "'");
    }
    if (std::find(std::begin(kFlags), std::end(kFlags), flag) == std::end(kFlags)) {
      return Status::InvalidArgument("unknown flag '" + std::string(flag) + "'");
    }
    if (i + 1 == argc) return Status::InvalidArgument(std::string(flag) + " needs a value");
    BERTH_RETURN_IF_ERROR(ParseFlag(flag, argv[++i], &args));
  }
  if (args.dir.empty()) return Status::InvalidArgument("--dir is required");
  if (!args.cgroup.empty() && !args.cgroup_v1.empty()) {
    return Status::InvalidArgument("--cgroup and --cgroup-v1 exclude each other");
  }
  if ((args.cpu_max || args.memory_max || args.pids_max) && args.cgroup.empty() &&
      args.cgroup_v1.empty()) {
    return Status::InvalidArgument("--cpu-max, --memory-max and --pids-max need --cgroup");
  }
  if (!args.cgroup_v1.empty() && ((args.cpu_max && !args.cgroup_v1.contains("cpu")) ||
                                  (args.memory_max && !args.cgroup_v1.contains("memory")) ||
                                  (args.pids_max && !args.cgroup_v1.contains("pids")))) {
    return Status::InvalidArgument(
        "--cpu-max needs --cgroup-v1 cpu=DIR, --memory-max --cgroup-v1 memory=DIR, --pids-max "
        "--cgroup-v1 pids=DIR");
  }
  struct stat st;
  if (::stat(args.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("--dir " + args.dir + " is not a directory");
  }
  if (i + 1 >= argc) return Status::InvalidArgument("no command after '--'");
  args.command.assign(argv + i + 1, argv + argc);
  return args;
}

// Reads the env file and removes it, so the values rest nowhere but in the
// task's memory. Errors name the file, never what is in it.
Status TakeEnvFile(ShimArgs* args) {
  if (args->env_file.empty()) return Status::Ok();
  const std::optional<std::string> text = ReadSmallFile(args->env_file);
  if (!text) return Status::InvalidArgument("--env-file " + args->env_file + " cannot be read");
  ::unlink(args->env_file.c_str());
  std::optional<std::vector<std::string>> env = ParseEnvFile(*text);
  if (!env) {
    return Status::InvalidArgument("--env-file " + args->env_file +
                                   " is not NUL-ended NAME=VALUE entries");
  }
  args->env = std::move(*env);
  return Status::Ok();
}

int64_t UnixNowNs() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t UnixNowMs() { return UnixNowNs() / 1'000'000; }

void Warn(const std::string& message) { std::fprintf(stderr, "berth-exec: %s\n", message.c_str()); }

// A closed 0, 1 or 2 would be taken by the next pipe, which the child's
// dup2 onto 0..2 would then clobber.
void OpenStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
}

// berth-node is multithreaded: a descriptor another of its threads opened
// without O_CLOEXEC may have come along; the task must not hold it.
void CloseInheritedFds() {
  if (::close_range(3, ~0U, 0) == 0) return;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;
  std::vector<int> fds;
  while (const dirent* entry = ::readdir(d)) {
    int fd = -1;
    if (ParseNumber(std::string_view(entry->d_name), &fd) && fd > 2 && fd != ::dirfd(d)) {
      fds.push_back(fd);
    }
  }
  ::closedir(d);
  for (int fd : fds) ::close(fd);
}

// The shim's children other than those it knows: descendants of the task
// that outlived their parents and were reparented to the shim.
std::vector<pid_t> ChildrenOfThisProcess() {
  std::vector<pid_t> children;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return children;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(d)) {
    pid_t pid = 0;
    if (!ParseNumber(std::string_view(entry->d_name), &pid)) continue;
    const std::optional<ProcStat> stat = ReadProcStat(pid);
    if (stat && stat->parent == self) children.push_back(pid);
  }
  ::closedir(d);
  return children;
}

// What the child tells the shim when it cannot exec.
struct ChildError {
  enum Step : int { kStdin, kWorkdir, kExec } step;
  int error;
};

class TaskShim {
 public:
  explicit TaskShim(ShimArgs args) : args_(std::move(args)), log_(args_.dir, args_.log) {}
  ~TaskShim();
  TaskShim(const TaskShim&) = delete;
  TaskShim& operator=(const TaskShim&) = delete;

  int Run();

 private:
  struct Output {
    int fd;
    const char* stream;
    LineBuffer lines;
  };

  Status Prepare();
  std::optional<std::string> StartTask();
  std::optional<std::string> ApplyLimits(pid_t pid);
  std::optional<std::string> MakeCgroup(const std::string& dir);
  std::optional<std::string> WriteLimitsV2();
  std::optional<std::string> WriteLimitsV1();
  bool OomKilled() const;
  [[noreturn]] void RunChild(int out, int err, int report, int go, char* const* argv);
  std::string Rejection(const ChildError& e) const;
  void Supervise();
  void HandleSignals();
  void RequestStop();
  void ReapChildren();
  void KillLeftovers();
  void KillCgroup();
  void RemoveCgroups();
  void DrainOutput();
  void ReadOutput(Output& output);
  void CloseOutput(Output& output);
  void WriteRecord(const char* stream, std::string_view text, int64_t time_ns);
  void WaitForSignal(int timeout_ms);
  int Finish(ExitRecord record);

  ShimArgs args_;
  LogWriter log_;
  sigset_t handled_;
  int signal_fd_ = -1;
  Output outputs_[2] = {{-1, "stdout", {}}, {-1, "stderr", {}}};
  pid_t task_ = -1;  // also its process group's id
  std::optional<int> task_status_;
  bool stop_requested_ = false;
  std::optional<int64_t> kill_at_ns_;  // steady clock; SIGKILL then
  int64_t started_at_ms_ = 0;
  int64_t finished_at_ms_ = 0;
  bool log_failed_ = false;  // said so once on stderr
  // The task's cgroups (args_.cgroup, or those of args_.cgroup_v1) that
  // this shim made (or found): what it empties and removes at the end.
  std::vector<std::string> cgroups_;
  // This shim's holder group in each of cgroups_ (HolderName).
  const std::string holder_ = HolderName(::getpid(), ProcessStartTime(::getpid()).value_or(0));
};

TaskShim::~TaskShim() {
  if (signal_fd_ >= 0) ::close(signal_fd_);
  for (Output& output : outputs_) {
    if (output.fd >= 0) ::close(output.fd);
  }
}

int TaskShim::Run() {
  std::optional<std::string> rejected;
  if (const Status prepared = Prepare(); !prepared.ok()) {
    rejected = prepared.message();
  } else {
    rejected = StartTask();
  }
  if (rejected) {
    RemoveCgroups();
    ExitRecord record;
    record.rejected = std::move(rejected);
    record.finished_at_ms = UnixNowMs();
    return Finish(std::move(record));
  }
  Supervise();
  KillLeftovers();
  DrainOutput();
  ReapChildren();
  ExitRecord record;
  if (args_.memory_max && OomKilled()) record.oom_limit = args_.memory_max;
  RemoveCgroups();
  record.stopped = stop_requested_;
  record.started_at_ms = started_at_ms_;
  record.finished_at_ms = finished_at_ms_;
  if (WIFSIGNALED(*task_status_)) {
    record.signal = WTERMSIG(*task_status_);
  } else {
    record.exit_code = WEXITSTATUS(*task_status_);
  }
  return Finish(std::move(record));
}

// Signals are blocked before anything else (ProcessExecutor spawns the shim
// with them blocked already), so a stop that comes early waits in the
// signalfd instead of killing the shim.
Status TaskShim::Prepare() {
  sigemptyset(&handled_);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&handled_, sig);
  ::sigprocmask(SIG_BLOCK, &handled_, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  OpenStandardFds();
  CloseInheritedFds();
  if (::getsid(0) != ::getpid() && ::setsid() < 0) Warn(std::string("setsid: ") + strerror(errno));
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    Warn(std::string("cannot become a subreaper: ") + strerror(errno));
  }
  signal_fd_ = ::signalfd(-1, &handled_, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) {
    return Status::Internal(std::string("cannot start: signalfd: ") + strerror(errno));
  }
  return log_.Open().WithContext("cannot open the task's log");
}

// The child waits for `go` to close before it execs, so the task's cgroup
// and limits are in place and DIR/pid exists before the task runs, and a
// shim that cannot apply them or write DIR/pid kills a child that never
// ran anything.
std::optional<std::string> TaskShim::StartTask() {
  int out[2], err[2], report[2], go[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(report, O_CLOEXEC) ||
      ::pipe2(go, O_CLOEXEC)) {
    return std::string("cannot start: pipe: ") + strerror(errno);
  }
  std::vector<char*> argv;
  for (std::string& arg : args_.command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  started_at_ms_ = UnixNowMs();
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child's copy of the parent's ends would keep `go` from ending.
    for (int fd : {out[0], err[0], report[0], go[1]}) ::close(fd);
    RunChild(out[1], err[1], report[1], go[0], argv.data());
  }
  for (int fd : {out[1], err[1], report[1], go[0]}) ::close(fd);
  outputs_[0].fd = out[0];
  outputs_[1].fd = err[0];
  if (pid < 0) {
    ::close(go[1]);
    ::close(report[0]);
    return std::string("cannot start: fork: ") + strerror(errno);
  }
  task_ = pid;
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  if (std::optional<std::string> not_applied = ApplyLimits(pid)) {
    ::kill(pid, SIGKILL);
    ::close(go[1]);
    ::close(report[0]);
    ::waitpid(pid, nullptr, 0);
    task_ = -1;
    return not_applied;
  }
  const PidRecord record{pid, ProcessStartTime(pid).value_or(0), ::getpid(),
                         ProcessStartTime(::getpid()).value_or(0)};
  const Status written = WriteFileAtomically(args_.dir + "/" + kPidFile, FormatPidRecord(record));
  if (!written.ok()) ::kill(pid, SIGKILL);
  ::close(go[1]);
  ChildError error{};
  ssize_t n;
  while ((n = ::read(report[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (written.ok() && n != sizeof error) return std::nullopt;
  ::waitpid(pid, nullptr, 0);
  task_ = -1;
  if (!written.ok()) return "cannot record the task's pid: " + written.message();
  return Rejection(error);
}

std::string CannotApply(const std::string& file, int error) {
  return "cannot apply limits: " + file + ": " + strerror(error);
}

// Writes `value` to `dir`/`name`; the rejection when that fails.
std::optional<std::string> WriteLimit(const std::string& dir, const char* name,
                                      const std::string& value) {
  const std::string file = dir + "/" + name;
  if (const int error = WriteCgroupFile(file, value)) return CannotApply(file, error);
  return std::nullopt;
}

// The task's cgroups, its limits, and the child in them (the shim itself
// stays where it is, outside the task's limits and its cgroup.kill).
std::optional<std::string> TaskShim::ApplyLimits(pid_t pid) {
  std::vector<std::string> dirs;
  if (!args_.cgroup.empty()) dirs.push_back(args_.cgroup);
  for (const auto& [controller, dir] : args_.cgroup_v1) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  for (const std::string& dir : dirs) {
    if (auto error = MakeCgroup(dir)) return error;
  }
  std::optional<std::string> error = args_.cgroup.empty() ? WriteLimitsV1() : WriteLimitsV2();
  for (size_t i = 0; !error && i < dirs.size(); ++i)
    error = WriteLimit(dirs[i], "cgroup.procs", std::to_string(pid));
  return error;
}

// A cgroup v1 parent (berth's group) that a berth-node removed as it
// stopped, having no tasks, is made again, and the group is held
// (holder_); the tries cover another node removing either meanwhile.
std::optional<std::string> TaskShim::MakeCgroup(const std::string& dir) {
  const std::string holder = dir + "/" + holder_;
  for (int tries = 1;; ++tries) {
    if (::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) {
      if (::mkdir(holder.c_str(), 0755) == 0 || errno == EEXIST) break;
      if (errno != ENOENT || tries == 3) return CannotApply(holder, errno);
      continue;  // swept between the two
    }
    if (errno != ENOENT || args_.cgroup_v1.empty() || tries == 3) return CannotApply(dir, errno);
    const std::string parent = dir.substr(0, dir.rfind('/'));
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) return CannotApply(parent, errno);
  }
  if (std::find(cgroups_.begin(), cgroups_.end(), dir) == cgroups_.end()) cgroups_.push_back(dir);
  return std::nullopt;
}

std::optional<std::string> TaskShim::WriteLimitsV2() {
  if (args_.cpu_max) {
    if (auto error = WriteLimit(args_.cgroup, "cpu.max", *args_.cpu_max)) return error;
  }
  if (args_.memory_max) {
    if (auto error = WriteLimit(args_.cgroup, "memory.max", std::to_string(*args_.memory_max))) {
      return error;
    }
  }
  if (args_.pids_max) {
    return WriteLimit(args_.cgroup, "pids.max", std::to_string(*args_.pids_max));
  }
  return std::nullopt;
}

// cgroup v1 spells cpu.max as two files, the period first (a quota is
// checked against the period in force), and "max" as -1.
std::optional<std::string> TaskShim::WriteLimitsV1() {
  if (args_.cpu_max) {
    const std::string& dir = args_.cgroup_v1.at("cpu");
    const size_t space = args_.cpu_max->find(' ');
    const std::string quota = args_.cpu_max->substr(0, space);
    if (auto error = WriteLimit(dir, "cpu.cfs_period_us", args_.cpu_max->substr(space + 1))) {
      return error;
    }
    if (auto error = WriteLimit(dir, "cpu.cfs_quota_us", quota == "max" ? "-1" : quota)) {
      return error;
    }
  }
  if (args_.memory_max) {
    if (auto error = WriteLimit(args_.cgroup_v1.at("memory"), "memory.limit_in_bytes",
                                std::to_string(*args_.memory_max))) {
      return error;
    }
  }
  if (args_.pids_max) {
    return WriteLimit(args_.cgroup_v1.at("pids"), "pids.max", std::to_string(*args_.pids_max));
  }
  return std::nullopt;
}

// The kernel counts the processes it killed for the memory limit: v2 in
// memory.events, v1 in memory.oom_control (Linux 4.13).
bool TaskShim::OomKilled() const {
  const std::optional<int64_t> kills =
      args_.cgroup.empty()
          ? (args_.cgroup_v1.contains("memory")
                 ? CgroupStat(args_.cgroup_v1.at("memory") + "/memory.oom_control", "oom_kill")
                 : std::nullopt)
          : CgroupStat(args_.cgroup + "/memory.events", "oom_kill");
  return kills.value_or(0) > 0;
}

void TaskShim::RunChild(int out, int err, int report, int go, char* const* argv) {
  const auto fail = [report](ChildError::Step step) {
    const ChildError error{step, errno};
    (void)!::write(report, &error, sizeof error);
    ::_exit(127);
  };
  ::setpgid(0, 0);
  char byte;
  while (::read(go, &byte, 1) < 0 && errno == EINTR) {
  }
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0) fail(ChildError::kStdin);
  ::dup2(null, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  // An ignored signal and the signal mask carry over an exec.
  std::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!args_.workdir.empty() && ::chdir(args_.workdir.c_str()) != 0) fail(ChildError::kWorkdir);
  for (const std::string& entry : args_.env) {
    const size_t equals = entry.find('=');
    ::setenv(entry.substr(0, equals).c_str(), entry.c_str() + equals + 1, 1);
  }
  ::execvp(argv[0], argv);
  fail(ChildError::kExec);
  ::_exit(127);  // not reached: fail exits
}

std::string TaskShim::Rejection(const ChildError& e) const {
  const std::string reason = strerror(e.error);
  switch (e.step) {
    case ChildError::kStdin:
      return "cannot open /dev/null for the task's stdin: " + reason;
    case ChildError::kWorkdir:
      return "cannot change to the working directory '" + args_.workdir + "': " + reason;
    case ChildError::kExec:
      break;
  }
  return "cannot run '" + args_.command[0] + "': " + reason;
}

void TaskShim::Supervise() {
  while (!task_status_) {
    int timeout_ms = -1;
    if (kill_at_ns_) {
      timeout_ms =
          static_cast<int>(std::max<int64_t>(0, (*kill_at_ns_ - SteadyNowNs()) / 1'000'000 + 1));
    }
    pollfd fds[] = {
        {signal_fd_, POLLIN, 0}, {outputs_[0].fd, POLLIN, 0}, {outputs_[1].fd, POLLIN, 0}};
    if (::poll(fds, 3, timeout_ms) < 0 && errno != EINTR) {
      Warn(std::string("poll: ") + strerror(errno));
      ::kill(-task_, SIGKILL);
      int status = 0;
      ::waitpid(task_, &status, 0);
      task_status_ = status;
      finished_at_ms_ = UnixNowMs();
      return;
    }
    if (fds[0].revents) HandleSignals();
    for (int i = 0; i < 2; ++i) {
      if (fds[i + 1].revents) ReadOutput(outputs_[i]);
    }
    if (kill_at_ns_ && SteadyNowNs() >= *kill_at_ns_ && !task_status_) {
      ::kill(-task_, SIGKILL);
      kill_at_ns_.reset();
    }
  }
}

void TaskShim::HandleSignals() {
  signalfd_siginfo info;
  while (::read(signal_fd_, &info, sizeof info) == sizeof info) {
    if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) RequestStop();
    if (info.ssi_signo == SIGCHLD) ReapChildren();
  }
}

void TaskShim::RequestStop() {
  if (stop_requested_ || task_status_) return;
  stop_requested_ = true;
  if (args_.grace_ms == 0) {
    ::kill(-task_, SIGKILL);
    return;
  }
  ::kill(-task_, SIGTERM);
  kill_at_ns_ = SteadyNowNs() + args_.grace_ms * 1'000'000;
}

// The task's group is killed while its leader is still a zombie: until it
// is reaped its pid, the group's id, cannot go to another process.
void TaskShim::ReapChildren() {
  siginfo_t info{};
  if (!task_status_ && ::waitid(P_PID, task_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == task_) {
    ::kill(-task_, SIGKILL);
  }
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid != task_ || task_status_) continue;
    ::kill(-task_, SIGKILL);  // a no-op but when it exited since the waitid
    task_status_ = status;
    finished_at_ms_ = UnixNowMs();
  }
}

// Descendants that left the task's group (setsid, setpgid) and were
// reparented to the shim are killed too, round by round, as killing one
// hands its own children to the shim; so is every process left in the
// task's cgroup, when it has one.
void TaskShim::KillLeftovers() {
  const int64_t deadline = SteadyNowNs() + kLeftoverBoundNs;
  for (;;) {
    ReapChildren();
    const std::vector<pid_t> children = ChildrenOfThisProcess();
    size_t in_cgroup = 0;
    for (const std::string& dir : cgroups_) in_cgroup += CgroupProcs(dir).size();
    if (children.empty() && in_cgroup == 0) return;
    if (SteadyNowNs() >= deadline) {
      Warn(std::to_string(children.size()) + " process(es) of the task would not die" +
           (in_cgroup ? ", " + std::to_string(in_cgroup) + " left in the task's cgroups" : ""));
      return;
    }
    for (pid_t child : children) ::kill(child, SIGKILL);
    KillCgroup();
    WaitForSignal(50);
  }
}

// cgroup.kill (cgroup v2, Linux 5.14) kills every process of the cgroup
// at once, and those that fork meanwhile. Without it (and on cgroup v1),
// each pid cgroup.procs lists.
void TaskShim::KillCgroup() {
  for (const std::string& dir : cgroups_) {
    if (dir == args_.cgroup && WriteCgroupFile(dir + "/cgroup.kill", "1") == 0) continue;
    KillCgroupProcs(dir);
  }
}

// Once the task's processes are gone; the kernel may take a moment to be
// done with the last of them (EBUSY) meanwhile.
void TaskShim::RemoveCgroups() {
  for (const std::string& dir : cgroups_) ::rmdir((dir + "/" + holder_).c_str());
  for (int tries = 1; !cgroups_.empty(); ++tries) {
    int error = 0;  // the first that is not ENOENT
    std::erase_if(cgroups_, [&error](const std::string& dir) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
      if (error == 0) error = errno;
      return false;
    });
    if (cgroups_.empty()) return;
    if (error != EBUSY || tries == kCgroupRemoveTries) {
      for (const std::string& dir : cgroups_) {
        Warn("cannot remove the task's cgroup " + dir + ": " + strerror(error));
      }
      return;
    }
    KillCgroup();
    ReapChildren();
    WaitForSignal(kCgroupRemoveWaitMs);
  }
}

void TaskShim::WaitForSignal(int timeout_ms) {
  pollfd fd{signal_fd_, POLLIN, 0};
  ::poll(&fd, 1, timeout_ms);
  signalfd_siginfo info;
  while (::read(signal_fd_, &info, sizeof info) == sizeof info) {
  }
}

// Every process of the task is dead, so the pipes end as soon as their
// contents are read; the bound is for a process that would not die.
void TaskShim::DrainOutput() {
  const int64_t deadline = SteadyNowNs() + kDrainBoundNs;
  while (outputs_[0].fd >= 0 || outputs_[1].fd >= 0) {
    const int64_t left_ms = (deadline - SteadyNowNs()) / 1'000'000;
    if (left_ms <= 0) break;
    pollfd fds[] = {{outputs_[0].fd, POLLIN, 0}, {outputs_[1].fd, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left_ms)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents) ReadOutput(outputs_[i]);
    }
  }
  for (Output& output : outputs_) CloseOutput(output);
}

void TaskShim::ReadOutput(Output& output) {
  char buf[64 * 1024];
  const ssize_t n = ::read(output.fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    CloseOutput(output);
    return;
  }
  const int64_t now = UnixNowNs();
  for (const std::string& text : output.lines.Add(std::string_view(buf, static_cast<size_t>(n)))) {
    WriteRecord(output.stream, text, now);
  }
}

void TaskShim::CloseOutput(Output& output) {
  if (output.fd < 0) return;
  ::close(output.fd);
  output.fd = -1;
  if (std::optional<std::string> rest = output.lines.Finish()) {
    WriteRecord(output.stream, *rest, UnixNowNs());
  }
}

void TaskShim::WriteRecord(const char* stream, std::string_view text, int64_t time_ns) {
  const Status written = log_.Append(time_ns, stream, text);
  if (!written.ok() && !log_failed_) {
    Warn(written.message() + " (the task's output is lost until writing works again)");
    log_failed_ = true;
  }
}

int TaskShim::Finish(ExitRecord record) {
  const Status written = WriteFileAtomically(args_.dir + "/" + kExitFile, FormatExitRecord(record));
  if (!written.ok()) {
    Warn(written.message());
    return 1;
  }
  return 0;
}

}  // namespace

int RunTaskShim(int argc, char** argv) {
  Result<ShimArgs> args = ParseArgs(argc, argv);
  const Status env = args.ok() ? TakeEnvFile(&*args) : args.status();
  if (!env.ok()) {
    std::fprintf(stderr, "berth-exec: %s\n%s", env.message().c_str(), kUsage);
    return 2;
  }
  return TaskShim(std::move(args).value()).Run();
}

}  // namespace berth::executor
