#include "executor/process_executor.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <utility>

#include "core/quantity.h"
#include "executor/cgroup_files.h"
#include "executor/proc_stat.h"
#include "executor/task_dir.h"

extern char** environ;

namespace berth::executor {
namespace {

namespace fs = std::filesystem;

constexpr char kNoCommand[] = "the task template gives no command";
constexpr char kSupervisorDied[] = "the task's supervisor died without an exit status";
constexpr int kCgroupReleaseTries = 100;  // 10 ms apart

std::string SignalName(int sig) {
  static constexpr std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
      {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGSYS, "SIGSYS"},
  };
  for (const auto& [number, name] : kNames) {
    if (number == sig) return name;
  }
  return "";
}

std::string KilledBy(int sig) {
  const std::string name = SignalName(sig);
  return "killed by signal " + std::to_string(sig) + (name.empty() ? "" : " (" + name + ")");
}

// How a shim's own exit is described when it left no exit file.
std::string ShimStatus(int status) {
  if (WIFSIGNALED(status)) return "was " + KilledBy(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

Ended Failed(bool rejected, int64_t ran_ms, std::string message) {
  Ended ended;
  ended.failed = true;
  ended.rejected = rejected;
  ended.ran_ms = ran_ms;
  ended.message = std::move(message);
  return ended;
}

ExitRecord Rejected(std::string why, int64_t finished_at_ms) {
  ExitRecord record;
  record.rejected = std::move(why);
  record.finished_at_ms = finished_at_ms;
  return record;
}

int64_t RanMs(const TaskToRun& task, Timestamp now) {
  return task.started_at ? std::max<int64_t>(0, (now - *task.started_at).count()) : 0;
}

// An end the memory limit caused says so: a SIGKILL of the main process
// is the kernel's OOM kill, any other end follows the kill of another of
// the task's processes.
std::string OomMessage(const ExitRecord& r, const std::string& message) {
  const std::string limit = "limit " + FormatBytes(*r.oom_limit);
  if (r.signal == SIGKILL) return "killed: out of memory (" + limit + ")";
  return message + " (a process of the task was killed: out of memory, " + limit + ")";
}

Ended FromExitRecord(const ExitRecord& r, int64_t fallback_ran_ms) {
  if (r.rejected) return Failed(true, 0, *r.rejected);
  Ended ended;
  ended.ran_ms = r.started_at_ms && r.finished_at_ms
                     ? std::max<int64_t>(0, r.finished_at_ms - r.started_at_ms)
                     : fallback_ran_ms;
  if (r.signal) {
    ended.failed = true;
    ended.message = KilledBy(*r.signal);
  } else {
    ended.failed = *r.exit_code != 0;
    ended.message =
        ended.failed ? "exit status " + std::to_string(*r.exit_code) : "completed (exit status 0)";
  }
  if (r.oom_limit) ended.message = OomMessage(r, ended.message);
  if (r.stopped) ended.message = "stopped: " + ended.message;
  return ended;
}

std::optional<PidRecord> ReadPidRecord(const std::string& dir) {
  const std::optional<std::string> text = ReadSmallFile(dir + "/" + kPidFile);
  return text ? ParsePidRecord(*text) : std::nullopt;
}

// A task whose shim is gone has nobody to end it: its group goes, if its
// leader is still the process the shim started.
void KillStrayTask(const std::string& dir) {
  const std::optional<PidRecord> record = ReadPidRecord(dir);
  if (record && IsSameLiveProcess(record->task_pid, record->task_start_time)) {
    ::kill(-record->task_pid, SIGKILL);
  }
}

bool IsEnvEntry(const std::string& entry) {
  const size_t equals = entry.find('=');
  return equals != 0 && equals != std::string::npos && entry.find('\0') == std::string::npos;
}

// errno of running `path` (0: it is an executable file).
int RunError(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return EACCES;
  return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
}

// Why the shim's execvp of `spec.command` would fail, or nullopt when it
// would find a program: a name with a '/' from the working directory, any
// other on PATH (the task's own, else berth-node's). Found before its task
// is said to run; a program removed meanwhile is still rejected by the
// shim, with the same message.
std::optional<std::string> CannotRun(const ProcessSpec& spec, const std::string& workdir) {
  const std::string& command = spec.command;
  int error = ENOENT;
  if (command.find('/') != std::string::npos) {
    error = RunError(command[0] == '/' ? command : workdir + "/" + command);
  } else {
    const char* node_path = std::getenv("PATH");
    std::string path = node_path != nullptr ? node_path : "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& entry : spec.env)
      if (entry.starts_with("PATH=")) path = entry.substr(5);
    std::istringstream dirs(path);
    for (std::string dir; error != 0 && std::getline(dirs, dir, ':');)
      if (const int e = RunError((dir.empty() ? "." : dir) + "/" + command); e != ENOENT) error = e;
  }
  if (error == 0) return std::nullopt;
  return "cannot run '" + command + "': " + std::strerror(error);
}

// The shim comes up with the signals it handles blocked, so a Stop right
// after Start is not lost (nor kills the shim) before it is ready; all
// other signals as the default, whatever berth-node ignores.
int SpawnShim(const std::vector<std::string>& args, const std::string& shim_log, pid_t* pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, shim_log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t blocked, defaults;
  sigemptyset(&blocked);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&blocked, sig);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &blocked);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return rc;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

constexpr char kNotEnforced[] = ": limits are not enforced";
constexpr char kPidsNotEnforced[] = ": pids limits are not enforced";

LimitsSupport NotEnforced(const std::string& why) {
  LimitsSupport limits;
  limits.reason = why + kNotEnforced;
  return limits;
}

std::string ErrnoText(int error) { return std::strerror(error); }

bool IsCgroup2(const std::string& dir) {
  struct statfs info {};
  return ::statfs(dir.c_str(), &info) == 0 && info.f_type == CGROUP2_SUPER_MAGIC;
}

// PrepareLimits's checks of a cgroup2 `cgroup_fs`, which change nothing:
// enforced with root = the directory of this process's group when they
// all hold.
LimitsSupport CheckLimits(std::string_view cgroup_fs_view, std::string_view self_cgroup_view) {
  const std::string cgroup_fs(cgroup_fs_view);
  const std::string self_cgroup(self_cgroup_view);
  const std::optional<std::string> text = ReadSmallFile(self_cgroup);
  if (!text) return NotEnforced("cannot read " + self_cgroup);
  const std::optional<std::string> path = OwnCgroupPath(*text);
  if (!path) {
    return NotEnforced("berth-node is in no cgroup v2 group (no 0:: line in " + self_cgroup + ")");
  }
  const std::string own = *path == "/" ? cgroup_fs : cgroup_fs + *path;
  for (const std::string& file : {own, own + "/cgroup.procs", own + "/cgroup.subtree_control"}) {
    if (::access(file.c_str(), W_OK) != 0) {
      return NotEnforced("berth-node's cgroup " + own + " is not delegated to it (" + file + ": " +
                         ErrnoText(errno) + ")");
    }
  }
  const std::vector<std::string> controllers =
      Words(ReadSmallFile(own + "/cgroup.controllers").value_or(""));
  if (std::find(controllers.begin(), controllers.end(), "cpu") == controllers.end() ||
      std::find(controllers.begin(), controllers.end(), "memory") == controllers.end()) {
    return NotEnforced("the cpu and memory controllers are not available in " + own);
  }
  LimitsSupport limits;
  limits.enforced = true;
  limits.cgroup_version = 2;
  limits.root = own;
  // pids is optional: without it cpu and memory limits hold all the same.
  limits.pids = std::find(controllers.begin(), controllers.end(), "pids") != controllers.end();
  if (!limits.pids) {
    limits.pids_reason = "the pids controller is not available in " + own + kPidsNotEnforced;
  }
  return limits;
}

// berth's group in each cgroup v1 hierarchy, under the hierarchy's root
// (as Docker's /docker): memory and cpu are needed, cpuacct is joined
// when mounted so that a task's CPU time is measured.
LimitsSupport PrepareLimitsV1(const std::string& cgroup_fs, const std::string& mounts_file) {
  const std::map<std::string, std::string> mounts =
      CgroupV1Mounts(ReadSmallFile(mounts_file).value_or(""));
  if (!mounts.contains("memory") || !mounts.contains("cpu")) {
    return NotEnforced("cgroup v2 is not mounted at " + cgroup_fs +
                       ", nor are cgroup v1's memory and cpu controllers (" + mounts_file + ")");
  }
  LimitsSupport limits;
  for (const char* controller : {"memory", "cpu", "cpuacct", "pids"}) {
    const auto it = mounts.find(controller);
    if (it == mounts.end()) continue;
    const std::string parent = it->second + "/berth";
    if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
      return NotEnforced("cannot create " + parent + ": " + ErrnoText(errno));
    }
    if (::access(parent.c_str(), W_OK) != 0) {
      return NotEnforced("cannot write to " + parent + ": " + ErrnoText(errno));
    }
    limits.v1_parents[controller] = parent;
  }
  limits.enforced = true;
  limits.cgroup_version = 1;
  limits.pids = limits.v1_parents.contains("pids");
  if (!limits.pids) {
    limits.pids_reason =
        "cgroup v1's pids controller is not mounted (" + mounts_file + ")" + kPidsNotEnforced;
  }
  return limits;
}

// cpu.max for a limit in cores: "<quota> <period>" in microseconds, the
// quota at least the kernel's minimum of 1000 and at most ten million
// cores' worth (far below the kernel's maximum).
std::string CpuMax(double cores) {
  double quota = cores * 100000;
  if (!(quota >= 1000)) quota = 1000;  // NaN too
  if (quota > 1e12) quota = 1e12;
  return std::to_string(std::llround(quota)) + " 100000";
}

}  // namespace

bool IsValidTaskDirName(const std::string& id) {
  return !id.empty() && id.size() <= 255 && id[0] != '.' &&
         id.find_first_of(std::string_view("/\0", 2)) == std::string::npos;
}

ProcessExecutor::ProcessExecutor(ProcessExecutorOptions options) : options_(std::move(options)) {
  // The shims run elsewhere than berth-node's working directory might be.
  std::error_code ignored;
  const fs::path absolute = fs::absolute(options_.tasks_dir, ignored);
  if (!absolute.empty()) options_.tasks_dir = absolute.string();
}

std::string ProcessExecutor::LogDir(const std::string& id) const {
  return options_.tasks_dir + "/" + id;
}

std::optional<std::string> ProcessExecutor::Start(const TaskToRun& task, Timestamp) {
  if (const auto it = rejected_.find(task.id); it != rejected_.end()) {
    return "not started: " + it->second;
  }
  if (!IsValidTaskDirName(task.id)) {
    return Reject(task.id, "the task id '" + task.id + "' cannot name a directory");
  }
  const std::string dir = LogDir(task.id);
  if (Shim* shim = Watch(task.id); shim && Poll(*shim)) {
    return "running (supervisor pid " + std::to_string(shim->pid) + ")";
  }
  std::error_code error;
  if (fs::exists(dir + "/" + kExitFile, error) || fs::exists(dir + "/" + kPidFile, error)) {
    changed_.push_back(task.id);  // for the loop to Check it
    return "started before, and has ended";
  }
  if (task.process == nullptr || task.process->command.empty()) return Reject(task.id, kNoCommand);
  for (const std::string& entry : task.process->env) {
    // The entry itself is not repeated: it may hold a secret.
    if (!IsEnvEntry(entry)) return Reject(task.id, "an env entry is not NAME=value");
  }
  if (task.process->limit_cpu && !(*task.process->limit_cpu > 0)) {
    return Reject(task.id, "the cpu limit must be above 0");
  }
  if (task.process->limit_memory && *task.process->limit_memory <= 0) {
    return Reject(task.id, "the memory limit must be above 0");
  }
  if (task.process->limit_pids && *task.process->limit_pids <= 0) {
    return Reject(task.id, "the pids limit must be above 0");
  }
  fs::create_directories(dir, error);
  if (error) return Reject(task.id, "cannot create " + dir + ": " + error.message());
  const std::string& workdir = task.process->workdir;
  if (std::optional<std::string> why =
          CannotRun(*task.process, workdir.empty()     ? dir
                                   : workdir[0] == '/' ? workdir
                                                       : dir + "/" + workdir))
    return Reject(task.id, *why);
  return Spawn(task, dir);
}

std::string ProcessExecutor::Spawn(const TaskToRun& task, const std::string& dir) {
  const ProcessSpec& spec = *task.process;
  std::string workdir = dir;
  if (!spec.workdir.empty()) {
    workdir = spec.workdir[0] == '/' ? spec.workdir : dir + "/" + spec.workdir;
  }
  std::vector<std::string> args = {
      options_.shim_path,
      "--dir",
      dir,
      "--grace-ms",
      std::to_string(std::max<int64_t>(0, spec.stop_grace_period.count())),
      "--workdir",
      workdir,
      "--log-max-bytes",
      std::to_string(options_.log_max_bytes),
      "--log-max-files",
      std::to_string(options_.log_max_files),
  };
  AddLimitArgs(task, &args);
  // The environment goes by a file of mode 0600, never argv (task_dir.h).
  std::vector<std::string> env = spec.env;
  env.insert(env.end(), {"BERTH_TASK_ID=" + task.id, "BERTH_NODE_ID=" + task.node});
  const std::string env_file = dir + "/" + kEnvFile;
  if (Status written = WriteFileAtomically(env_file, FormatEnvFile(env), 0600); !written.ok()) {
    return Reject(task.id, "cannot write the task's environment: " + written.message());
  }
  args.insert(args.end(), {"--env-file", env_file, "--", spec.command});
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  pid_t pid = 0;
  const int rc = SpawnShim(args, dir + "/" + kShimLogFile, &pid);
  if (rc != 0) {
    return Reject(task.id, "cannot start the task's supervisor " + options_.shim_path + ": " +
                               std::strerror(rc));
  }
  Shim& shim = shims_[task.id] = Shim{};
  shim.pid = pid;
  shim.start_time = ProcessStartTime(pid).value_or(0);
  shim.own_child = true;
  return "started (supervisor pid " + std::to_string(pid) + ")";
}

// The shim's cgroup and limit flags of a task with limits, where this node
// can apply them; a pids limit only where the cgroups take one (else it
// runs without, as a node without cgroups runs every limit).
void ProcessExecutor::AddLimitArgs(const TaskToRun& task, std::vector<std::string>* args) const {
  const ProcessSpec& spec = *task.process;
  if (!spec.HasLimits() || (options_.cgroup_root.empty() && options_.cgroup_v1_parents.empty())) {
    return;
  }
  if (!options_.cgroup_root.empty()) {
    args->insert(args->end(), {"--cgroup", options_.cgroup_root + "/task-" + task.id});
  } else {
    for (const auto& [controller, parent] : options_.cgroup_v1_parents) {
      args->insert(args->end(), {"--cgroup-v1", controller + "=" + parent + "/task-" + task.id});
    }
  }
  if (spec.limit_cpu) args->insert(args->end(), {"--cpu-max", CpuMax(*spec.limit_cpu)});
  if (spec.limit_memory) {
    args->insert(args->end(), {"--memory-max", std::to_string(*spec.limit_memory)});
  }
  if (spec.limit_pids && options_.pids_limits) {
    args->insert(args->end(), {"--pids-max", std::to_string(*spec.limit_pids)});
  }
}

// Kept in memory, and in the task's directory when it has one, so that a
// restarted berth-node still reports it.
std::string ProcessExecutor::Reject(const std::string& id, const std::string& why) {
  rejected_[id] = why;
  changed_.push_back(id);
  if (IsValidTaskDirName(id)) {
    std::error_code error;
    fs::create_directories(LogDir(id), error);
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    if (!error) {
      (void)WriteFileAtomically(LogDir(id) + "/" + kExitFile,
                                FormatExitRecord(Rejected(why, now_ms)));
    }
  }
  return "not started: " + why;
}

// A shim that is our child is asked with waitpid alone (its pid cannot be
// reused before we reap it). An adopted one by its start time first, and
// then waitpid too, since after a restart within one process (tests) it
// may be our child all the same.
bool ProcessExecutor::Poll(Shim& shim) {
  if (!shim.running) return false;
  int status = 0;
  if (!shim.own_child) {
    const std::optional<ProcStat> stat = ReadProcStat(shim.pid);
    if (!stat || stat->start_time != shim.start_time) {
      shim.running = false;
      return false;
    }
    if (stat->state == 'Z' || stat->state == 'X') {
      if (::waitpid(shim.pid, &status, WNOHANG) == shim.pid) shim.wait_status = status;
      shim.running = false;
      return false;
    }
    return true;
  }
  const pid_t reaped = ::waitpid(shim.pid, &status, WNOHANG);
  if (reaped == 0) return true;
  if (reaped == shim.pid) shim.wait_status = status;
  shim.running = false;
  return false;
}

ProcessExecutor::Shim* ProcessExecutor::Watch(const std::string& id) {
  if (const auto it = shims_.find(id); it != shims_.end()) return &it->second;
  const std::optional<PidRecord> record = ReadPidRecord(LogDir(id));
  if (!record || !IsSameLiveProcess(record->shim_pid, record->shim_start_time)) return nullptr;
  Shim& shim = shims_[id] = Shim{};
  shim.pid = record->shim_pid;
  shim.start_time = record->shim_start_time;
  return &shim;
}

std::optional<Ended> ProcessExecutor::Check(const TaskToRun& task, Timestamp now,
                                            std::optional<Timestamp>*) {
  if (const auto it = rejected_.find(task.id); it != rejected_.end()) {
    return Failed(true, 0, it->second);
  }
  if (!IsValidTaskDirName(task.id)) {
    return Failed(true, 0, "the task id '" + task.id + "' cannot name a directory");
  }
  Shim* shim = Watch(task.id);
  if (shim && Poll(*shim)) return std::nullopt;
  return Outcome(task, now, shim);
}

std::optional<Ended> ProcessExecutor::Outcome(const TaskToRun& task, Timestamp now,
                                              const Shim* shim) {
  const std::string dir = LogDir(task.id);
  if (const std::optional<std::string> text = ReadSmallFile(dir + "/" + kExitFile)) {
    if (const std::optional<ExitRecord> record = ParseExitRecord(*text)) {
      return FromExitRecord(*record, RanMs(task, now));
    }
  }
  KillStrayTask(dir);
  ReleaseCgroups(task.id);
  std::string message = kSupervisorDied;
  if (shim && shim->wait_status) message += " (it " + ShimStatus(*shim->wait_status) + ")";
  std::error_code error;
  if (!fs::exists(dir, error)) {
    message = "nothing is known of the task on this node (no " + dir + ")";
  }
  return Failed(false, RanMs(task, now), message);
}

// The cgroups a task with limits runs in (whether it has them or not).
std::vector<std::string> ProcessExecutor::CgroupsOf(const std::string& id) const {
  std::vector<std::string> dirs;
  if (!options_.cgroup_root.empty()) dirs.push_back(options_.cgroup_root + "/task-" + id);
  for (const auto& [controller, parent] : options_.cgroup_v1_parents) {
    const std::string dir = parent + "/task-" + id;
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return dirs;
}

// A task whose shim died leaves its cgroups behind, maybe with processes
// that left its group: they are killed and the cgroups (and the dead
// shim's holders) removed, the
// kernel given up to a second to be done with the dead (EBUSY).
void ProcessExecutor::ReleaseCgroups(const std::string& id) {
  for (const std::string& dir : CgroupsOf(id)) {
    std::error_code error;
    if (!fs::exists(dir, error)) continue;
    RemoveDeadHolders(dir);
    for (int tries = 0; tries < kCgroupReleaseTries; ++tries) {
      if (WriteCgroupFile(dir + "/cgroup.kill", "1") != 0) KillCgroupProcs(dir);
      if (::rmdir(dir.c_str()) == 0 || errno != EBUSY) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void ProcessExecutor::Stop(const TaskToRun& task) {
  if (rejected_.contains(task.id) || !IsValidTaskDirName(task.id)) return;
  if (Shim* shim = Watch(task.id); shim && Poll(*shim)) {
    ::kill(shim->pid, SIGTERM);
    return;
  }
  KillStrayTask(LogDir(task.id));
  ReleaseCgroups(task.id);
}

std::vector<std::string> ProcessExecutor::TakeChanged() {
  for (auto& [id, shim] : shims_) {
    if (shim.running && !Poll(shim)) changed_.push_back(id);
  }
  std::sort(changed_.begin(), changed_.end());
  changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
  return std::exchange(changed_, {});
}

Result<std::vector<AdoptedTask>> ProcessExecutor::Adopt() {
  std::error_code error;
  fs::create_directories(options_.tasks_dir, error);
  if (error) {
    return Status::Internal("cannot create " + options_.tasks_dir + ": " + error.message());
  }
  std::vector<AdoptedTask> tasks;
  for (fs::directory_iterator it(options_.tasks_dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string id = it->path().filename().string();
    if (!IsValidTaskDirName(id) || !it->is_directory(error)) continue;
    Shim* shim = Watch(id);
    tasks.push_back({id, shim && Poll(*shim)});
  }
  if (error) return Status::Internal("cannot list " + options_.tasks_dir + ": " + error.message());
  std::sort(tasks.begin(), tasks.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return tasks;
}

Status ProcessExecutor::Remove(const std::string& id) {
  if (!IsValidTaskDirName(id)) {
    if (rejected_.erase(id) > 0) return Status::Ok();
    return Status::InvalidArgument("no task directory for '" + id + "'");
  }
  if (Shim* shim = Watch(id); shim && Poll(*shim)) {
    return Status::Conflict("task " + id + " is still running: stop it first");
  }
  const std::string dir = LogDir(id);
  KillStrayTask(dir);  // its pid goes with the directory
  ReleaseCgroups(id);
  std::error_code error;
  fs::remove_all(dir, error);
  if (error) return Status::Internal("cannot remove " + dir + ": " + error.message());
  shims_.erase(id);
  rejected_.erase(id);
  return Status::Ok();
}

void ReleaseLimits(const LimitsSupport& limits) {
  for (const auto& [controller, parent] : limits.v1_parents) ::rmdir(parent.c_str());
}

std::optional<std::string> OwnCgroupPath(std::string_view text) {
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.starts_with("0::")) continue;
    const std::string_view path = line.substr(3);
    if (!path.starts_with('/')) return std::nullopt;
    return std::string(path.size() > 1 && path.ends_with('/') ? path.substr(0, path.size() - 1)
                                                              : path);
  }
  return std::nullopt;
}

// Moving the processes: a pid that exits meanwhile is no matter (ESRCH);
// ones that the others fork meanwhile are moved by the next round.
LimitsSupport PrepareLimits(std::string_view cgroup_fs, std::string_view self_cgroup_file,
                            std::string_view mounts_file) {
  if (!IsCgroup2(std::string(cgroup_fs))) {
    LimitsSupport limits = PrepareLimitsV1(std::string(cgroup_fs), std::string(mounts_file));
    for (const auto& [controller, parent] : limits.v1_parents) RemoveStaleTaskCgroups(parent);
    return limits;
  }
  LimitsSupport limits = CheckLimits(cgroup_fs, self_cgroup_file);
  if (!limits.enforced) return limits;
  RemoveStaleTaskCgroups(limits.root);
  const std::string& own = limits.root;
  const std::string node = own + "/berth-node";
  if (::mkdir(node.c_str(), 0755) != 0 && errno != EEXIST) {
    return NotEnforced("cannot create " + node + ": " + ErrnoText(errno));
  }
  // The root of the hierarchy (which has no cgroup.type) may have processes
  // of its own, and some of them (kernel threads) cannot move.
  std::error_code error;
  const bool is_root = !fs::exists(own + "/cgroup.type", error);
  for (int round = 0; !is_root && round < 10; ++round) {
    const std::vector<pid_t> pids = CgroupProcs(own);
    if (pids.empty()) break;
    for (pid_t pid : pids) {
      const int rc = WriteCgroupFile(node + "/cgroup.procs", std::to_string(pid));
      if (rc != 0 && rc != ESRCH) {
        return NotEnforced("cannot move process " + std::to_string(pid) + " to " + node +
                           "/cgroup.procs: " + ErrnoText(rc));
      }
    }
  }
  const std::string subtree = own + "/cgroup.subtree_control";
  if (const int rc = WriteCgroupFile(subtree, "+cpu +memory"); rc != 0) {
    return NotEnforced("cannot enable the cpu and memory controllers in " + subtree + ": " +
                       ErrnoText(rc));
  }
  if (const int rc = limits.pids ? WriteCgroupFile(subtree, "+pids") : 0; rc != 0) {
    limits.pids = false;
    limits.pids_reason =
        "cannot enable the pids controller in " + subtree + ": " + ErrnoText(rc) + kPidsNotEnforced;
  }
  return limits;
}

}  // namespace berth::executor
