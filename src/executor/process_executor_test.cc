// ProcessExecutor with the real berth-exec and real processes. Waits are
// for an event (TakeChanged naming a task, a file appearing), polled at a
// short interval up to a bound; every test kills and reaps what it started.
#include "executor/process_executor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "executor/log_files.h"
#include "executor/proc_stat.h"
#include "executor/task_dir.h"
#include "store/test_dir.h"

namespace berth::executor {
namespace {

namespace fs = std::filesystem;

// Whether `ready` holds within `bound`, asked every 10 ms.
bool Eventually(const std::function<bool()>& ready,
                std::chrono::milliseconds bound = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

ProcessSpec Shell(const std::string& script) {
  ProcessSpec spec;
  spec.command = "sh";
  spec.args = {"-c", script};
  return spec;
}

class ProcessExecutorTest : public testing::Test {
 protected:
  ~ProcessExecutorTest() override { KillAll(); }

  ProcessExecutorOptions Options() const {
    ProcessExecutorOptions options;
    options.tasks_dir = tasks_dir_;
    options.shim_path = BERTH_EXEC_BINARY;
    return options;
  }

  const TaskToRun& Task(const std::string& id, const ProcessSpec* spec) {
    ids_.push_back(id);
    return tasks_.emplace_back(TaskToRun{ids_.back(), node_, no_run_, t0_, spec});
  }

  // Whether `executor` names `id` in TakeChanged within the bound.
  static bool Changes(ProcessExecutor& executor, const std::string& id) {
    return Eventually([&] {
      const std::vector<std::string> changed = executor.TakeChanged();
      return std::find(changed.begin(), changed.end(), id) != changed.end();
    });
  }

  std::optional<PidRecord> Pids(const std::string& id) const {
    const std::optional<std::string> text = ReadSmallFile(tasks_dir_ + "/" + id + "/pid");
    return text ? ParsePidRecord(*text) : std::nullopt;
  }

  std::vector<LogLine> Log(const std::string& id) const {
    const Result<std::vector<LogLine>> lines = ReadLog(tasks_dir_ + "/" + id, 0, 0);
    return lines.ok() ? *lines : std::vector<LogLine>{};
  }

  // A process the task started, which wrote its pid as the log's first line.
  std::optional<PidRecord> ChildOf(const std::string& id) const {
    std::vector<LogLine> log;
    if (!Eventually([&] { return !(log = Log(id)).empty(); })) return std::nullopt;
    const pid_t pid = std::atoi(log.front().text.c_str());
    const std::optional<uint64_t> start = ProcessStartTime(pid);
    if (!start) return std::nullopt;
    return PidRecord{pid, *start, 0, 0};
  }

  // Whatever a test left running, whether it passed or not: each task's
  // group and shim are killed, and the shims, our children, reaped.
  void KillAll() {
    std::error_code error;
    for (fs::directory_iterator it(tasks_dir_, error), end; !error && it != end;
         it.increment(error)) {
      const std::optional<PidRecord> pids = Pids(it->path().filename().string());
      if (!pids) continue;
      if (IsSameLiveProcess(pids->task_pid, pids->task_start_time)) {
        ::kill(-pids->task_pid, SIGKILL);
      }
      if (ProcessStartTime(pids->shim_pid) == pids->shim_start_time) {
        ::kill(pids->shim_pid, SIGKILL);
        ::waitpid(pids->shim_pid, nullptr, 0);
      }
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  store::TestDir dir_;
  const std::string tasks_dir_ = dir_.path() + "/tasks";
  const std::string node_ = "n1";
  const std::optional<SimulatedRun> no_run_;
  const Timestamp t0_ = *ParseRfc3339("2026-01-01T00:00:00Z");
  std::deque<std::string> ids_;
  std::deque<TaskToRun> tasks_;
  ProcessExecutor executor_{Options()};
};

// The task runs in its directory, with the spec's env and BERTH_TASK_ID
// and BERTH_NODE_ID (which the spec cannot override); its stdout and
// stderr land in its log, and an exit status of 0 completes it.
TEST_F(ProcessExecutorTest, ATaskThatExitsZeroCompletesWithItsOutputLogged) {
  ProcessSpec spec =
      Shell("echo hi; echo oops >&2; echo $BERTH_TASK_ID $BERTH_NODE_ID $GREETING; pwd");
  spec.env = {"GREETING=hello", "BERTH_TASK_ID=spoofed"};
  const TaskToRun& task = Task("web.1", &spec);
  const std::optional<std::string> started = executor_.Start(task, t0_);
  ASSERT_TRUE(started.has_value());
  EXPECT_TRUE(started->starts_with("started (supervisor pid ")) << *started;
  ASSERT_TRUE(Changes(executor_, "web.1"));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = executor_.Check(task, t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_FALSE(ended->failed);
  EXPECT_FALSE(ended->rejected);
  EXPECT_EQ(ended->message, "completed (exit status 0)");
  EXPECT_GE(ended->ran_ms, 0);
  EXPECT_FALSE(due.has_value());

  const std::vector<LogLine> log = Log("web.1");
  ASSERT_EQ(log.size(), 4u);
  // stdout and stderr are separate pipes: only each stream's order is kept.
  std::vector<std::string> out;
  for (const LogLine& line : log) {
    if (line.stream == "stderr") {
      EXPECT_EQ(line.text, "oops");
    } else {
      out.push_back(line.text);
    }
    EXPECT_GT(line.time_ns, 0);
  }
  EXPECT_EQ(out, (std::vector<std::string>{"hi", "web.1 n1 hello", executor_.LogDir("web.1")}));
  EXPECT_EQ(log.front().seq, 1u);
  EXPECT_EQ(log.back().seq, 4u);
}

// Nothing of berth-node's reaches the task but its environment: no other
// descriptor (the shell's are listed), no blocked signal and no ignored
// standard one (a command's are read: a shell masks every signal for a
// moment as it forks). glibc's posix_spawn leaves its own two internal
// real-time signals, 32 and 33, ignored in the shim and so in the task;
// glibc programs set their own handlers for them when they need them.
TEST_F(ProcessExecutorTest, TheTaskGetsOnlyStdioAndDefaultSignals) {
  const ProcessSpec spec = Shell("ls /proc/$$/fd; grep -E '^Sig(Blk|Ign)' /proc/self/status");
  const TaskToRun& task = Task("job.7", &spec);
  executor_.Start(task, t0_);
  ASSERT_TRUE(Changes(executor_, "job.7"));
  std::vector<std::string> out;
  for (const LogLine& line : Log("job.7")) out.push_back(line.text);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(out.begin(), out.begin() + 4),
            (std::vector<std::string>{"0", "1", "2", "SigBlk:\t0000000000000000"}));
  ASSERT_TRUE(out[4].starts_with("SigIgn:\t"));
  EXPECT_EQ(std::strtoull(out[4].c_str() + 8, nullptr, 16) & 0x7fffffffULL, 0u) << out[4];
}

TEST_F(ProcessExecutorTest, ANonZeroExitFailsWithItsStatus) {
  const ProcessSpec spec = Shell("exit 3");
  const TaskToRun& task = Task("job.1", &spec);
  executor_.Start(task, t0_);
  ASSERT_TRUE(Changes(executor_, "job.1"));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = executor_.Check(task, t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_FALSE(ended->rejected);
  EXPECT_EQ(ended->message, "exit status 3");
  // Checked again, it says the same.
  EXPECT_EQ(executor_.Check(task, t0_, &due)->message, "exit status 3");
}

TEST_F(ProcessExecutorTest, AProgramThatCannotRunIsRejectedWithTheReason) {
  ProcessSpec missing;
  missing.command = "berth-no-such-program";
  ProcessSpec bad_workdir = Shell("true");
  bad_workdir.workdir = "/berth-no-such-directory";
  const TaskToRun& a = Task("a.1", &missing);
  const TaskToRun& b = Task("b.1", &bad_workdir);
  executor_.Start(a, t0_);
  executor_.Start(b, t0_);
  ASSERT_TRUE(Changes(executor_, "a.1"));
  std::optional<Timestamp> due;
  std::optional<Ended> ended = executor_.Check(a, t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_TRUE(ended->rejected);
  EXPECT_EQ(ended->message, "cannot run 'berth-no-such-program': No such file or directory");
  ASSERT_TRUE(Eventually([&] { return executor_.Check(b, t0_, &due).has_value(); }));
  ended = executor_.Check(b, t0_, &due);
  EXPECT_TRUE(ended->rejected);
  EXPECT_EQ(ended->message,
            "cannot change to the working directory '/berth-no-such-directory': No such file or "
            "directory");
}

// Rejected before any shim runs: no command, an id that cannot name a
// directory. Start says so, TakeChanged names the task, Check rejects it.
TEST_F(ProcessExecutorTest, ATaskWithoutACommandOrWithABadIdIsRejected) {
  const ProcessSpec spec = Shell("true");
  const TaskToRun& no_command = Task("web.2", nullptr);
  const TaskToRun& bad_id = Task("../escape", &spec);
  EXPECT_EQ(executor_.Start(no_command, t0_), "not started: the task template gives no command");
  EXPECT_EQ(executor_.Start(bad_id, t0_),
            "not started: the task id '../escape' cannot name a directory");
  EXPECT_EQ(executor_.TakeChanged(), (std::vector<std::string>{"../escape", "web.2"}));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = executor_.Check(no_command, t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->rejected);
  EXPECT_EQ(ended->message, "the task template gives no command");
  EXPECT_TRUE(executor_.Check(bad_id, t0_, &due)->rejected);
  EXPECT_FALSE(fs::exists(dir_.path() + "/escape"));
  // A restarted berth-node still knows, from the task's directory.
  ProcessExecutor restarted(Options());
  EXPECT_EQ(restarted.Check(no_command, t0_, &due)->message, "the task template gives no command");
}

// A task that ignores SIGTERM is killed with SIGKILL once the grace period
// is over, and so is the child it started, which ignores SIGTERM too.
TEST_F(ProcessExecutorTest, StopKillsATaskThatIgnoresSigtermAfterTheGracePeriod) {
  ProcessSpec spec = Shell("trap '' TERM; sleep 1000 & echo $!; wait");
  spec.stop_grace_period = Duration{300};
  const TaskToRun& task = Task("svc.1", &spec);
  executor_.Start(task, t0_);
  const std::optional<PidRecord> child = ChildOf("svc.1");
  ASSERT_TRUE(child.has_value());
  const auto stopped_at = std::chrono::steady_clock::now();
  executor_.Stop(task);
  ASSERT_TRUE(Changes(executor_, "svc.1"));
  EXPECT_GE(std::chrono::steady_clock::now() - stopped_at, std::chrono::milliseconds(250));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = executor_.Check(task, t0_, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_EQ(ended->message, "stopped: killed by signal 9 (SIGKILL)");
  EXPECT_FALSE(IsSameLiveProcess(child->task_pid, child->task_start_time));
}

// A task that heeds SIGTERM ends by it, long before its grace period.
TEST_F(ProcessExecutorTest, StopEndsATaskBySigterm) {
  ProcessSpec spec;
  spec.command = "sleep";
  spec.args = {"1000"};
  const TaskToRun& task = Task("svc.2", &spec);
  executor_.Start(task, t0_);
  ASSERT_TRUE(Eventually([&] { return Pids("svc.2").has_value(); }));
  executor_.Stop(task);
  ASSERT_TRUE(Changes(executor_, "svc.2"));
  std::optional<Timestamp> due;
  EXPECT_EQ(executor_.Check(task, t0_, &due)->message, "stopped: killed by signal 15 (SIGTERM)");
}

// The shim comes up with SIGTERM blocked: a stop that comes before it is
// ready waits for it, and reaches the task once it runs.
TEST_F(ProcessExecutorTest, AStopRightAfterStartIsNotLost) {
  ProcessSpec spec;
  spec.command = "sleep";
  spec.args = {"1000"};
  const TaskToRun& task = Task("svc.5", &spec);
  executor_.Start(task, t0_);
  executor_.Stop(task);
  ASSERT_TRUE(Changes(executor_, "svc.5"));
  std::optional<Timestamp> due;
  EXPECT_EQ(executor_.Check(task, t0_, &due)->message, "stopped: killed by signal 15 (SIGTERM)");
}

TEST_F(ProcessExecutorTest, AShimThatCannotStartRejectsTheTask) {
  ProcessExecutorOptions options = Options();
  options.shim_path = dir_.path() + "/no-such-shim";
  ProcessExecutor executor(options);
  const ProcessSpec spec = Shell("true");
  const TaskToRun& task = Task("job.6", &spec);
  EXPECT_EQ(executor.Start(task, t0_), "not started: cannot start the task's supervisor " +
                                           options.shim_path + ": No such file or directory");
  std::optional<Timestamp> due;
  EXPECT_TRUE(executor.Check(task, t0_, &due)->rejected);
}

// When the task's process exits, what it left running goes with it: its
// group, and a process that left the group.
TEST_F(ProcessExecutorTest, NothingOfATaskOutlivesIt) {
  const ProcessSpec spec = Shell(
      "setsid sleep 1000 & echo $!; sleep 1000 & while [ ! -e go ]; do sleep 0.02; done; exit 0");
  const TaskToRun& task = Task("job.2", &spec);
  executor_.Start(task, t0_);
  const std::optional<PidRecord> child = ChildOf("job.2");
  ASSERT_TRUE(child.has_value());
  std::ofstream(executor_.LogDir("job.2") + "/go").put('\n');
  ASSERT_TRUE(Changes(executor_, "job.2"));
  std::optional<Timestamp> due;
  EXPECT_EQ(executor_.Check(task, t0_, &due)->message, "completed (exit status 0)");
  EXPECT_FALSE(IsSameLiveProcess(child->task_pid, child->task_start_time));
}

// A restarted berth-node (a second executor on the same directory) adopts
// the running task, does not start it again, and sees it end.
TEST_F(ProcessExecutorTest, ARestartedExecutorAdoptsARunningTaskAndSeesItEnd) {
  const ProcessSpec spec = Shell("while [ ! -e go ]; do sleep 0.02; done; exit 7");
  const TaskToRun& task = Task("svc.3", &spec);
  const TaskToRun& done = Task("job.3", &spec);
  executor_.Start(task, t0_);
  executor_.Start(done, t0_);
  std::ofstream(executor_.LogDir("job.3") + "/go").put('\n');
  ASSERT_TRUE(Changes(executor_, "job.3"));
  ASSERT_TRUE(Eventually([&] { return Pids("svc.3").has_value(); }));

  ProcessExecutor restarted(Options());
  const Result<std::vector<AdoptedTask>> adopted = restarted.Adopt();
  ASSERT_TRUE(adopted.ok()) << adopted.status().message();
  EXPECT_EQ(*adopted, (std::vector<AdoptedTask>{{"job.3", false}, {"svc.3", true}}));
  const std::optional<PidRecord> before = Pids("svc.3");
  const std::optional<std::string> again = restarted.Start(task, t0_);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, "running (supervisor pid " + std::to_string(before->shim_pid) + ")");
  EXPECT_EQ(Pids("svc.3"), before);
  std::optional<Timestamp> due;
  EXPECT_FALSE(restarted.Check(task, t0_, &due).has_value());
  EXPECT_EQ(restarted.Remove("svc.3").code(), StatusCode::kConflict);

  std::ofstream(executor_.LogDir("svc.3") + "/go").put('\n');
  ASSERT_TRUE(Changes(restarted, "svc.3"));
  EXPECT_EQ(restarted.Check(task, t0_, &due)->message, "exit status 7");
  EXPECT_EQ(restarted.Check(done, t0_, &due)->message, "exit status 7");
  EXPECT_EQ(restarted.Start(done, t0_), "started before, and has ended");
  EXPECT_TRUE(restarted.Remove("svc.3").ok());
  EXPECT_FALSE(fs::exists(executor_.LogDir("svc.3")));
}

// A shim killed with SIGKILL leaves no exit status: the task fails, and
// its process, left without a supervisor, is killed.
TEST_F(ProcessExecutorTest, ATaskWhoseShimWasKilledFails) {
  ProcessSpec spec;
  spec.command = "sleep";
  spec.args = {"1000"};
  const TaskToRun& task = Task("svc.4", &spec);
  executor_.Start(task, t0_);
  ASSERT_TRUE(Eventually([&] { return Pids("svc.4").has_value(); }));
  const PidRecord pids = *Pids("svc.4");

  ProcessExecutor restarted(Options());
  ASSERT_EQ(*restarted.Adopt(), (std::vector<AdoptedTask>{{"svc.4", true}}));
  ASSERT_EQ(::kill(pids.shim_pid, SIGKILL), 0);
  ASSERT_TRUE(Changes(restarted, "svc.4"));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = restarted.Check(task, t0_ + Duration{1500}, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_FALSE(ended->rejected);
  EXPECT_TRUE(ended->message.starts_with("the task's supervisor died without an exit status"))
      << ended->message;
  EXPECT_EQ(ended->ran_ms, 1500);
  EXPECT_TRUE(Eventually([&] { return !IsSameLiveProcess(pids.task_pid, pids.task_start_time); }));
  EXPECT_EQ(*restarted.Adopt(), (std::vector<AdoptedTask>{{"svc.4", false}}));
}

// Small log files: at most log_max_files of them, and ReadLog's tail and
// after_seq read across them.
TEST_F(ProcessExecutorTest, TheLogRotatesAsConfigured) {
  ProcessExecutorOptions options = Options();
  options.log_max_bytes = 256;
  options.log_max_files = 2;
  ProcessExecutor executor(options);
  const ProcessSpec spec = Shell("i=1; while [ $i -le 100 ]; do echo line $i; i=$((i+1)); done");
  const TaskToRun& task = Task("job.4", &spec);
  executor.Start(task, t0_);
  ASSERT_TRUE(Changes(executor, "job.4"));
  std::optional<Timestamp> due;
  EXPECT_FALSE(executor.Check(task, t0_, &due)->failed);
  const std::string dir = executor.LogDir("job.4");
  EXPECT_TRUE(fs::exists(LogFilePath(dir, 1)));
  EXPECT_FALSE(fs::exists(LogFilePath(dir, 2)));
  const std::vector<LogLine> tail = *ReadLog(dir, 0, 3);
  ASSERT_EQ(tail.size(), 3u);
  EXPECT_EQ(tail[0].seq, 98u);
  EXPECT_EQ(tail[2].text, "line 100");
  const std::vector<LogLine> after = *ReadLog(dir, 95, 0);
  ASSERT_EQ(after.size(), 5u);
  EXPECT_EQ(after[0].text, "line 96");
}

TEST_F(ProcessExecutorTest, RemoveDeletesAnEndedTasksDirectory) {
  const ProcessSpec spec = Shell("true");
  const TaskToRun& task = Task("job.5", &spec);
  executor_.Start(task, t0_);
  ASSERT_TRUE(Changes(executor_, "job.5"));
  EXPECT_TRUE(executor_.Remove("job.5").ok());
  EXPECT_FALSE(fs::exists(executor_.LogDir("job.5")));
  EXPECT_TRUE(executor_.Remove("job.5").ok());  // gone already
  EXPECT_EQ(executor_.Remove("..").code(), StatusCode::kInvalidArgument);
}

// A fake shim that writes the arguments it was given, one a line, to
// DIR/args (DIR follows --dir, the first flag), and exits.
std::string ArgsOfFakeShim(const std::string& dir, ProcessExecutorOptions options,
                           const TaskToRun& task) {
  options.shim_path = dir + "/fake-shim";
  std::ofstream(options.shim_path) << "#!/bin/sh\nfor a; do echo \"$a\"; done > \"$2/args.tmp\"\n"
                                   << "mv \"$2/args.tmp\" \"$2/args\"\n";
  fs::permissions(options.shim_path, fs::perms::owner_all);
  ProcessExecutor executor(options);
  executor.Start(task, Timestamp{});
  const std::string args_file = executor.LogDir(task.id) + "/args";
  Eventually([&] { return fs::exists(args_file); });
  return ReadSmallFile(args_file).value_or("");
}

// `-e DB_PASSWORD=...` stood in the supervisor's command line, which
// /proc/PID/cmdline shows every local user: the environment now goes by a
// file of mode 0600 that the shim removes once it has read it.
TEST_F(ProcessExecutorTest, TheEnvironmentStandsInNoCommandLine) {
  const auto cmdline = [](pid_t pid) {
    return ReadSmallFile("/proc/" + std::to_string(pid) + "/cmdline").value_or("");
  };
  ProcessSpec spec = Shell("echo \"$DB_PASSWORD\"; exec sleep 30");
  spec.env = {"DB_PASSWORD=hunter2"};
  const TaskToRun& task = Task("db.1", &spec);
  ASSERT_TRUE(executor_.Start(task, t0_)->starts_with("started"));
  std::vector<LogLine> log;
  ASSERT_TRUE(Eventually([&] { return !(log = Log("db.1")).empty(); }));
  EXPECT_EQ(log.front().text, "hunter2");
  const std::optional<PidRecord> pids = Pids("db.1");
  ASSERT_TRUE(pids.has_value());
  const std::string shim_args = cmdline(pids->shim_pid);
  EXPECT_NE(shim_args.find("--env-file"), std::string::npos);
  EXPECT_EQ(shim_args.find("hunter2"), std::string::npos);
  EXPECT_EQ(cmdline(pids->task_pid).find("hunter2"), std::string::npos);
  EXPECT_FALSE(fs::exists(executor_.LogDir("db.1") + "/" + kEnvFile));
  // Written for the shim with mode 0600 (a fake shim leaves it there).
  const std::string fake = ArgsOfFakeShim(dir_.path(), Options(), Task("db.2", &spec));
  EXPECT_EQ(fake.find("hunter2"), std::string::npos) << fake;
  const std::string env_file = executor_.LogDir("db.2") + "/" + kEnvFile;
  EXPECT_EQ(fs::status(env_file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(
      ParseEnvFile(ReadSmallFile(env_file).value_or("")),
      (std::vector<std::string>{"DB_PASSWORD=hunter2", "BERTH_TASK_ID=db.2", "BERTH_NODE_ID=n1"}));
}

// With a cgroup root, a task with limits gets a cgroup and them; without,
// or without limits, it gets none.
TEST_F(ProcessExecutorTest, ATaskWithLimitsGetsItsCgroupAndLimitsFromTheExecutor) {
  ProcessSpec both = Shell("true");
  both.limit_cpu = 0.29;
  both.limit_memory = 64 << 20;
  ProcessSpec pids_only = Shell("true");
  pids_only.limit_pids = 32;
  ProcessSpec tiny_cpu = Shell("true");
  tiny_cpu.limit_cpu = 0.001;
  const ProcessSpec none = Shell("true");
  ProcessExecutorOptions options = Options();
  options.cgroup_root = "/sys/fs/cgroup/berth";
  const std::string args = ArgsOfFakeShim(dir_.path(), options, Task("lim.1", &both));
  EXPECT_NE(args.find("\n--cgroup\n/sys/fs/cgroup/berth/task-lim.1\n--cpu-max\n29000 100000\n"
                      "--memory-max\n67108864\n--env-file\n"),
            std::string::npos)
      << args;
  EXPECT_NE(
      ArgsOfFakeShim(dir_.path(), options, Task("lim.2", &tiny_cpu))
          .find(
              "\n--cgroup\n/sys/fs/cgroup/berth/task-lim.2\n--cpu-max\n1000 100000\n--env-file\n"),
      std::string::npos);
  // A pids limit is passed only where the cgroups take one; the task gets
  // its cgroup all the same.
  EXPECT_NE(ArgsOfFakeShim(dir_.path(), options, Task("lim.10", &pids_only))
                .find("\n--cgroup\n/sys/fs/cgroup/berth/task-lim.10\n--env-file\n"),
            std::string::npos);
  options.pids_limits = true;
  EXPECT_NE(ArgsOfFakeShim(dir_.path(), options, Task("lim.11", &pids_only))
                .find("\n--cgroup\n/sys/fs/cgroup/berth/task-lim.11\n--pids-max\n32\n--env-file\n"),
            std::string::npos);
  const std::string no_limits = ArgsOfFakeShim(dir_.path(), options, Task("lim.3", &none));
  EXPECT_FALSE(no_limits.empty());
  EXPECT_EQ(no_limits.find("--cgroup"), std::string::npos) << no_limits;
  options.cgroup_root.clear();
  const std::string no_root = ArgsOfFakeShim(dir_.path(), options, Task("lim.4", &both));
  EXPECT_FALSE(no_root.empty());
  EXPECT_EQ(no_root.find("--cgroup"), std::string::npos) << no_root;
  EXPECT_EQ(no_root.find("--memory-max"), std::string::npos) << no_root;
}

TEST_F(ProcessExecutorTest, ATaskWithALimitOfZeroIsRejected) {
  ProcessSpec spec = Shell("true");
  spec.limit_memory = 0;
  EXPECT_EQ(executor_.Start(Task("lim.5", &spec), t0_),
            "not started: the memory limit must be above 0");
  spec.limit_memory.reset();
  spec.limit_cpu = 0;
  EXPECT_EQ(executor_.Start(Task("lim.6", &spec), t0_),
            "not started: the cpu limit must be above 0");
  spec.limit_cpu.reset();
  spec.limit_pids = 0;
  EXPECT_EQ(executor_.Start(Task("lim.9", &spec), t0_),
            "not started: the pids limit must be above 0");
}

// Runs only where this machine can enforce limits (cgroup v2 with berth's
// cgroup delegated): PrepareLimits then moves this test process to
// <its cgroup>/berth-node, as it does berth-node.
TEST_F(ProcessExecutorTest, ATaskWithLimitsRunsInItsOwnCgroupWhereTheNodeCan) {
  const LimitsSupport limits = PrepareLimits();
  if (!limits.enforced) GTEST_SKIP() << "needs limits enforced on this machine: " << limits.reason;
  if (limits.cgroup_version != 2) {
    ReleaseLimits(limits);
    GTEST_SKIP() << "needs cgroup v2 (cgroup_limits_test.cc runs tasks under v1's limits)";
  }
  ASSERT_FALSE(limits.root.empty());
  ProcessExecutorOptions options = Options();
  options.cgroup_root = limits.root;
  ProcessExecutor executor(options);
  ProcessSpec spec =
      Shell("setsid sleep 1000 & echo $!; while [ ! -e go ]; do sleep 0.02; done; exit 0");
  spec.limit_memory = 64 << 20;
  spec.limit_cpu = 0.5;
  const TaskToRun& task = Task("lim.7", &spec);
  executor.Start(task, t0_);
  const std::string cgroup = limits.root + "/task-lim.7";
  const std::optional<PidRecord> child = ChildOf("lim.7");
  ASSERT_TRUE(child.has_value());
  const std::optional<PidRecord> pids = Pids("lim.7");
  ASSERT_TRUE(pids.has_value());
  EXPECT_EQ(ReadSmallFile(cgroup + "/memory.max"), "67108864\n");
  EXPECT_EQ(ReadSmallFile(cgroup + "/cpu.max"), "50000 100000\n");
  const std::string procs = ReadSmallFile(cgroup + "/cgroup.procs").value_or("");
  EXPECT_NE(procs.find(std::to_string(pids->task_pid) + "\n"), std::string::npos) << procs;
  EXPECT_NE(procs.find(std::to_string(child->task_pid) + "\n"), std::string::npos) << procs;
  std::ofstream(executor.LogDir("lim.7") + "/go").put('\n');
  ASSERT_TRUE(Changes(executor, "lim.7"));
  std::optional<Timestamp> due;
  EXPECT_EQ(executor.Check(task, t0_, &due)->message, "completed (exit status 0)");
  EXPECT_FALSE(IsSameLiveProcess(child->task_pid, child->task_start_time));
  EXPECT_FALSE(fs::exists(cgroup));
}

// The checks of PrepareLimits on a directory that is not cgroup v2 (on
// this machine, neither is /sys/fs/cgroup): nothing is set up.
TEST(PrepareLimits, ADirectoryThatIsNotCgroupV2EnforcesNothing) {
  store::TestDir dir;
  std::ofstream(dir.path() + "/self-cgroup") << "0::/\n";
  const std::string mounts = dir.path() + "/mounts";  // none: no cgroup v1 either
  LimitsSupport limits = PrepareLimits(dir.path(), dir.path() + "/self-cgroup", mounts);
  EXPECT_FALSE(limits.enforced);
  EXPECT_EQ(limits.reason, "cgroup v2 is not mounted at " + dir.path() +
                               ", nor are cgroup v1's memory and cpu controllers (" + mounts +
                               "): limits are not enforced");
  EXPECT_EQ(limits.root, "");
  EXPECT_FALSE(fs::exists(dir.path() + "/berth-node"));
  limits = PrepareLimits(dir.path() + "/none", dir.path() + "/self-cgroup", mounts);
  EXPECT_FALSE(limits.enforced);
  EXPECT_EQ(limits.reason, "cgroup v2 is not mounted at " + dir.path() +
                               "/none, nor are cgroup v1's memory and cpu controllers (" + mounts +
                               "): limits are not enforced");
}

TEST(PrepareLimits, OwnCgroupPathIsTheCgroupV2Line) {
  EXPECT_EQ(OwnCgroupPath("0::/a/b\n"), "/a/b");
  EXPECT_EQ(OwnCgroupPath("0::/a/b"), "/a/b");
  EXPECT_EQ(OwnCgroupPath("0::/\n"), "/");
  EXPECT_EQ(OwnCgroupPath("0::/a/b/\n"), "/a/b");
  // cgroup v1 and v2 side by side (systemd's "hybrid").
  EXPECT_EQ(OwnCgroupPath("4:memory:/x\n1:name=systemd:/y\n0::/user.slice/berth\n"),
            "/user.slice/berth");
  EXPECT_EQ(OwnCgroupPath("4:memory:/x\n1:cpu,cpuacct:/\n"), std::nullopt);  // v1 only
  EXPECT_EQ(OwnCgroupPath("10::/x\n"), std::nullopt);
  EXPECT_EQ(OwnCgroupPath("0::x\n"), std::nullopt);
  EXPECT_EQ(OwnCgroupPath(""), std::nullopt);
}

TEST(TaskDirName, RefusesWhatIsNotAPlainName) {
  EXPECT_TRUE(IsValidTaskDirName("web.1"));
  for (const std::string& bad : std::vector<std::string>{
           "", ".", "..", ".hidden", "a/b", std::string("a\0b", 3), std::string(256, 'x')}) {
    EXPECT_FALSE(IsValidTaskDirName(bad)) << bad;
  }
}

// The shim's exit status; its stderr goes to `stderr_file`.
int RunShim(const std::string& args, const std::string& stderr_file = "/dev/null") {
  const int status =
      std::system((std::string(BERTH_EXEC_BINARY) + " " + args + " 2>" + stderr_file).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The first line of what the shim said on stderr, when it exits 2.
std::string ShimRefusal(const std::string& args) {
  store::TestDir out;
  if (RunShim(args, out.path() + "/stderr") != 2) return "(did not exit 2)";
  const std::string text = ReadSmallFile(out.path() + "/stderr").value_or("");
  return text.substr(0, text.find('\n'));
}

TEST(TaskShim, RefusesBadArguments) {
  store::TestDir dir;
  EXPECT_EQ(RunShim(""), 2);
  EXPECT_EQ(RunShim("--bogus 1 -- true"), 2);
  EXPECT_EQ(RunShim("-- true"), 2);                                // no --dir
  EXPECT_EQ(RunShim("--dir " + dir.path()), 2);                    // no command
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --"), 2);            // no command
  EXPECT_EQ(RunShim("--dir " + dir.path() + "/none -- true"), 2);  // no such directory
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --grace-ms -1 -- true"), 2);
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --log-max-files 0 -- true"), 2);
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --env A=x -- true"), 2);  // only by a file
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --env-file " + dir.path() + "/none -- true"), 2);
  // A bad env file is refused without a word of what it holds.
  ASSERT_TRUE(
      WriteFileAtomically(dir.path() + "/env", std::string("SECRET=hunter2\0=x\0", 18), 0600).ok());
  const std::string refusal =
      ShimRefusal("--dir " + dir.path() + " --env-file " + dir.path() + "/env -- true");
  EXPECT_NE(refusal.find("--env-file"), std::string::npos) << refusal;
  EXPECT_EQ(refusal.find("hunter2"), std::string::npos) << refusal;
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --workdir"), 2);
  EXPECT_FALSE(fs::exists(dir.path() + "/exit"));
  EXPECT_EQ(RunShim("--dir " + dir.path() + " -- true"), 0);
  EXPECT_EQ(ReadSmallFile(dir.path() + "/exit").value_or("").substr(0, 12), "exit_code 0\n");
}

TEST(TaskShim, RefusesLimitsWithoutACgroupAndBadLimits) {
  store::TestDir dir;
  const std::string d = "--dir " + dir.path() + " ";
  for (const char* limit : {"--cpu-max '50000 100000'", "--memory-max 67108864", "--pids-max 5"}) {
    EXPECT_EQ(ShimRefusal(d + limit + " -- true"),
              "berth-exec: --cpu-max, --memory-max and --pids-max need --cgroup")
        << limit;
  }
  const std::string cg = d + "--cgroup " + dir.path() + "/cg ";
  EXPECT_EQ(ShimRefusal(cg + "--memory-max 64M -- true"),
            "berth-exec: --memory-max takes a whole number from 1 to 9223372036854775807, not "
            "'64M'");
  EXPECT_EQ(ShimRefusal(cg + "--memory-max 0 -- true"),
            "berth-exec: --memory-max takes a whole number from 1 to 9223372036854775807, not "
            "'0'");
  for (const char* bad : {"0", "4194305", "-1", "ten"}) {
    EXPECT_EQ(ShimRefusal(cg + "--pids-max " + bad + " -- true"),
              std::string("berth-exec: --pids-max takes a whole number from 1 to 4194304, not '") +
                  bad + "'");
  }
  EXPECT_EQ(ShimRefusal(d + "--cgroup cg --memory-max 1 -- true"),
            "berth-exec: --cgroup takes an absolute directory, not 'cg'");
  for (const char* bad :
       {"50000", "500 100000", "50000 100", "50000 2000000", "x 100000", "50000  100000"}) {
    EXPECT_TRUE(ShimRefusal(cg + "--cpu-max '" + bad + "' -- true")
                    .starts_with("berth-exec: --cpu-max takes \"QUOTA PERIOD\""))
        << bad;
  }
  EXPECT_FALSE(fs::exists(dir.path() + "/exit"));
  EXPECT_FALSE(fs::exists(dir.path() + "/cg"));
}

// A plain directory as the task's cgroup: it has none of a cgroup's files,
// so the limits cannot be applied and the task is rejected before its
// command runs. The cgroup the shim made is removed.
TEST(TaskShim, RejectsATaskWhoseLimitsCannotBeApplied) {
  store::TestDir dir;
  const std::string cg = dir.path() + "/cg";
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --workdir " + dir.path() + " --cgroup " + cg +
                    " --cpu-max '50000 100000' --memory-max 67108864 -- touch ran"),
            0);
  const std::optional<ExitRecord> exit =
      ParseExitRecord(ReadSmallFile(dir.path() + "/exit").value_or(""));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->rejected, "cannot apply limits: " + cg + "/cpu.max: No such file or directory");
  EXPECT_FALSE(fs::exists(dir.path() + "/ran"));
  EXPECT_FALSE(fs::exists(dir.path() + "/pid"));
  EXPECT_FALSE(fs::exists(cg));
}

// Its limits written, a task whose cgroup takes no pid (a plain directory
// again, with the two limit files) is rejected all the same; a cgroup that
// cannot be removed is noted.
TEST(TaskShim, WritesTheLimitsBeforeMovingTheTaskIntoItsCgroup) {
  store::TestDir dir;
  const std::string cg = dir.path() + "/cg";
  fs::create_directory(cg);
  std::ofstream(cg + "/cpu.max") << "max 100000\n";
  std::ofstream(cg + "/memory.max") << "max\n";
  std::ofstream(cg + "/pids.max");  // empty: what is written is all it holds
  EXPECT_EQ(RunShim("--dir " + dir.path() + " --workdir " + dir.path() + " --cgroup " + cg +
                        " --cpu-max '50000 100000' --memory-max 67108864 --pids-max 64 -- touch "
                        "ran",
                    dir.path() + "/stderr"),
            0);
  const std::optional<ExitRecord> exit =
      ParseExitRecord(ReadSmallFile(dir.path() + "/exit").value_or(""));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->rejected,
            "cannot apply limits: " + cg + "/cgroup.procs: No such file or directory");
  EXPECT_FALSE(fs::exists(dir.path() + "/ran"));
  // One write each, over what was there (a cgroup file takes it whole).
  EXPECT_EQ(ReadSmallFile(cg + "/cpu.max"), "50000 100000");
  EXPECT_EQ(ReadSmallFile(cg + "/memory.max"), "67108864");
  EXPECT_EQ(ReadSmallFile(cg + "/pids.max"), "64");
  EXPECT_EQ(ReadSmallFile(dir.path() + "/stderr"),
            "berth-exec: cannot remove the task's cgroup " + cg + ": Directory not empty\n");
}

}  // namespace
}  // namespace berth::executor
