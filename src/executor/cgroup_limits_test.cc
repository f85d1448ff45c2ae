// Resource limits on cgroup v1 and v2: the set-up (PrepareLimits) and the
// shim's cgroup steps against plain directories, which run anywhere, and
// real tasks under real limits, which run where this machine can enforce
// them (root, and cgroup v1's memory and cpu controllers or a delegated
// cgroup v2) and skip elsewhere, saying why. Waits are for an event,
// polled at a short interval up to a bound; every test kills what it
// started and checks that none of its cgroups is left.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "executor/cgroup_files.h"
#include "executor/proc_stat.h"
#include "executor/process_executor.h"
#include "executor/task_dir.h"
#include "executor/test_programs.h"
#include "store/test_dir.h"

namespace berth::executor {
// Named, not anonymous: the unity build puts this file beside
// process_executor_test.cc, whose helpers have the same names.
namespace cgroup_limits_test {

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

bool Changes(ProcessExecutor& executor, const std::string& id) {
  return Eventually([&] {
    const std::vector<std::string> changed = executor.TakeChanged();
    return std::find(changed.begin(), changed.end(), id) != changed.end();
  });
}

TEST(CgroupV1Mounts, NamesEachControllersMountPoint) {
  const std::map<std::string, std::string> mounts = CgroupV1Mounts(
      "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n"
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n"
      "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
      "cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,xattr,name=systemd 0 0\n"
      "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
      "cgroup /elsewhere/memory cgroup rw,memory 0 0\n");
  EXPECT_EQ(mounts, (std::map<std::string, std::string>{{"cpu", "/sys/fs/cgroup/cpu,cpuacct"},
                                                        {"cpuacct", "/sys/fs/cgroup/cpu,cpuacct"},
                                                        {"memory", "/sys/fs/cgroup/memory"}}));
  EXPECT_TRUE(CgroupV1Mounts("").empty());
}

TEST(CgroupStat, ReadsAKeyOfACgroupFile) {
  store::TestDir dir;
  std::ofstream(dir.path() + "/memory.oom_control")
      << "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
  EXPECT_EQ(CgroupStat(dir.path() + "/memory.oom_control", "oom_kill"), 3);
  EXPECT_EQ(CgroupStat(dir.path() + "/memory.oom_control", "under_oom"), 0);
  EXPECT_EQ(CgroupStat(dir.path() + "/memory.oom_control", "oom"), std::nullopt);
  EXPECT_EQ(CgroupStat(dir.path() + "/none", "oom_kill"), std::nullopt);
}

// A group its live supervisor holds stays even when it is empty (its task
// has just exited); one whose holder is gone goes with the holder, as does
// an unheld one. Plain directories stand for the groups.
TEST(RemoveStaleTaskCgroups, LeavesGroupsThatALiveSupervisorHolds) {
  store::TestDir dir;
  const std::string d = dir.path();
  const pid_t self = ::getpid();
  const uint64_t started = ProcessStartTime(self).value();
  fs::create_directories(d + "/task-held/" + HolderName(self, started));
  fs::create_directories(d + "/task-orphan/" + HolderName(self, started + 1));
  fs::create_directories(d + "/task-unheld");
  fs::create_directories(d + "/task-busy/not-a-holder");
  fs::create_directories(d + "/kept");
  RemoveStaleTaskCgroups(d);
  EXPECT_TRUE(fs::exists(d + "/task-held/" + HolderName(self, started)));
  EXPECT_FALSE(fs::exists(d + "/task-orphan"));
  EXPECT_FALSE(fs::exists(d + "/task-unheld"));
  EXPECT_TRUE(fs::exists(d + "/task-busy/not-a-holder"));
  EXPECT_TRUE(fs::exists(d + "/kept"));
}

// Plain directories stand for the hierarchies: berth's group is made in
// each (cpu and cpuacct mounted together share one), an empty task group
// a killed shim left goes, anything else stays; ReleaseLimits removes
// berth's groups that hold nothing.
TEST(PrepareLimits, CgroupV1ControllersGetBerthsGroups) {
  store::TestDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/memory/berth/task-old");
  fs::create_directories(d + "/memory/berth/kept");
  fs::create_directories(d + "/cpu");
  std::ofstream(d + "/mounts") << "cgroup " << d << "/memory cgroup rw,memory 0 0\n"
                               << "cgroup " << d << "/cpu cgroup rw,relatime,cpu,cpuacct 0 0\n";
  const LimitsSupport limits = PrepareLimits(d, d + "/self-cgroup", d + "/mounts");
  EXPECT_TRUE(limits.enforced) << limits.reason;
  EXPECT_EQ(limits.cgroup_version, 1);
  EXPECT_EQ(limits.root, "");
  EXPECT_EQ(limits.v1_parents,
            (std::map<std::string, std::string>{{"cpu", d + "/cpu/berth"},
                                                {"cpuacct", d + "/cpu/berth"},
                                                {"memory", d + "/memory/berth"}}));
  EXPECT_FALSE(fs::exists(d + "/memory/berth/task-old"));
  EXPECT_TRUE(fs::exists(d + "/memory/berth/kept"));
  EXPECT_FALSE(limits.pids);
  EXPECT_EQ(limits.pids_reason, "cgroup v1's pids controller is not mounted (" + d +
                                    "/mounts): pids limits are not enforced");
  ReleaseLimits(limits);
  EXPECT_FALSE(fs::exists(d + "/cpu/berth"));
  EXPECT_TRUE(fs::exists(d + "/memory/berth"));
}

// With the pids controller mounted, it gets berth's group too, and pids
// limits are enforced; a task group a killed shim left there goes too.
TEST(PrepareLimits, CgroupV1sPidsControllerEnforcesPidsLimits) {
  store::TestDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/pids/berth/task-old");
  std::ofstream(d + "/mounts") << "cgroup " << d << "/memory cgroup rw,memory 0 0\n"
                               << "cgroup " << d << "/cpu cgroup rw,cpu 0 0\n"
                               << "cgroup " << d << "/pids cgroup rw,relatime,pids 0 0\n";
  fs::create_directories(d + "/memory");
  fs::create_directories(d + "/cpu");
  const LimitsSupport limits = PrepareLimits(d, d + "/self-cgroup", d + "/mounts");
  EXPECT_TRUE(limits.enforced) << limits.reason;
  EXPECT_TRUE(limits.pids) << limits.pids_reason;
  EXPECT_EQ(limits.pids_reason, "");
  EXPECT_EQ(limits.v1_parents.at("pids"), d + "/pids/berth");
  EXPECT_FALSE(fs::exists(d + "/pids/berth/task-old"));
  ReleaseLimits(limits);
  for (const char* group : {"/memory/berth", "/cpu/berth", "/pids/berth"})
    EXPECT_FALSE(fs::exists(d + group)) << group;
}

TEST(PrepareLimits, WithoutCgroupV2NorV1sControllersNothingIsEnforced) {
  store::TestDir dir;
  const std::string d = dir.path();
  std::ofstream(d + "/mounts") << "cgroup " << d << "/memory cgroup rw,memory 0 0\n";
  const LimitsSupport limits = PrepareLimits(d, d + "/self-cgroup", d + "/mounts");
  EXPECT_FALSE(limits.enforced);
  EXPECT_EQ(limits.reason, "cgroup v2 is not mounted at " + d +
                               ", nor are cgroup v1's memory and cpu controllers (" + d +
                               "/mounts): limits are not enforced");
  EXPECT_TRUE(limits.v1_parents.empty());
  EXPECT_FALSE(limits.pids);
  EXPECT_FALSE(fs::exists(d + "/memory/berth"));
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

TEST(ProcessExecutorV1, ATaskWithLimitsJoinsAGroupInEachHierarchy) {
  store::TestDir dir;
  ProcessExecutorOptions options;
  options.tasks_dir = dir.path() + "/tasks";
  options.cgroup_v1_parents = {{"cpu", "/cg/cpu/berth"}, {"memory", "/cg/memory/berth"}};
  ProcessSpec spec;
  spec.command = "true";
  spec.limit_cpu = 0.5;
  spec.limit_memory = 64 << 20;
  const std::string args =
      ArgsOfFakeShim(dir.path(), options, TaskToRun{"lim.1", "n1", std::nullopt, {}, &spec});
  EXPECT_NE(args.find("\n--cgroup-v1\ncpu=/cg/cpu/berth/task-lim.1\n--cgroup-v1\nmemory=/cg/"
                      "memory/berth/task-lim.1\n--cpu-max\n50000 100000\n--memory-max\n67108864\n"),
            std::string::npos)
      << args;
  EXPECT_EQ(args.find("\n--cgroup\n"), std::string::npos) << args;
}

// A pids limit joins the task to berth's group of the pids hierarchy, with
// the others, and sets its pids.max there.
TEST(ProcessExecutorV1, APidsLimitGoesToThePidsHierarchy) {
  store::TestDir dir;
  ProcessExecutorOptions options;
  options.tasks_dir = dir.path() + "/tasks";
  options.cgroup_v1_parents = {{"memory", "/cg/memory/berth"}, {"pids", "/cg/pids/berth"}};
  options.pids_limits = true;
  ProcessSpec spec;
  spec.command = "true";
  spec.limit_pids = 64;
  const std::string args =
      ArgsOfFakeShim(dir.path(), options, TaskToRun{"lim.2", "n1", std::nullopt, {}, &spec});
  EXPECT_NE(args.find("\n--cgroup-v1\nmemory=/cg/memory/berth/task-lim.2\n--cgroup-v1\npids=/cg/"
                      "pids/berth/task-lim.2\n--pids-max\n64\n--env-file\n"),
            std::string::npos)
      << args;
}

// The shim's exit status; its stderr goes to `stderr_file`.
int RunShim(const std::string& args, const std::string& stderr_file = "/dev/null") {
  const int status =
      std::system((std::string(BERTH_EXEC_BINARY) + " " + args + " 2>" + stderr_file).c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Plain directories with v1's limit files: the period goes before the
// quota, and a group that takes no pid rejects the task before it runs.
TEST(TaskShimV1, WritesV1sLimitFilesThenRejectsWhatTakesNoPid) {
  store::TestDir dir;
  const std::string d = dir.path();
  fs::create_directories(d + "/memory/berth/t");
  fs::create_directories(d + "/cpu/berth/t");
  fs::create_directories(d + "/pids/berth/t");
  for (const char* file : {"/cpu/berth/t/cpu.cfs_period_us", "/cpu/berth/t/cpu.cfs_quota_us",
                           "/memory/berth/t/memory.limit_in_bytes"}) {
    std::ofstream(d + file) << "-1\n";
  }
  std::ofstream(d + "/pids/berth/t/pids.max");  // empty: what is written is all it holds
  EXPECT_EQ(RunShim("--dir " + d + " --workdir " + d + " --cgroup-v1 memory=" + d +
                    "/memory/berth/t --cgroup-v1 cpu=" + d + "/cpu/berth/t --cgroup-v1 pids=" + d +
                    "/pids/berth/t --cpu-max '25000 50000' --memory-max 67108864 --pids-max 10 "
                    "-- touch ran"),
            0);
  const std::optional<ExitRecord> exit = ParseExitRecord(ReadSmallFile(d + "/exit").value_or(""));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->rejected,
            "cannot apply limits: " + d + "/cpu/berth/t/cgroup.procs: No such file or directory");
  EXPECT_FALSE(fs::exists(d + "/ran"));
  EXPECT_EQ(ReadSmallFile(d + "/cpu/berth/t/cpu.cfs_period_us"), "50000");
  EXPECT_EQ(ReadSmallFile(d + "/cpu/berth/t/cpu.cfs_quota_us"), "25000");
  EXPECT_EQ(ReadSmallFile(d + "/memory/berth/t/memory.limit_in_bytes"), "67108864");
  EXPECT_EQ(ReadSmallFile(d + "/pids/berth/t/pids.max"), "10");
}

TEST(TaskShimV1, RefusesBadV1Arguments) {
  store::TestDir dir;
  const std::string d = "--dir " + dir.path() + " ";
  EXPECT_EQ(RunShim(d + "--cgroup-v1 blkio=/x -- true"), 2);
  EXPECT_EQ(RunShim(d + "--cgroup-v1 memory=x -- true"), 2);
  EXPECT_EQ(RunShim(d + "--cgroup /a --cgroup-v1 memory=/x -- true"), 2);
  EXPECT_EQ(RunShim(d + "--cgroup-v1 memory=/x --cpu-max '50000 100000' -- true"), 2);
  EXPECT_EQ(RunShim(d + "--cgroup-v1 memory=/x --pids-max 10 -- true"), 2);
  EXPECT_FALSE(fs::exists(dir.path() + "/exit"));
}

// How an OOM kill reads, from the exit file a shim writes.
TEST(ProcessExecutorV1, AnOomKillIsReportedWithTheLimit) {
  store::TestDir dir;
  ProcessExecutorOptions options;
  options.tasks_dir = dir.path() + "/tasks";
  options.shim_path = "/nonexistent";
  ProcessExecutor executor(options);
  const std::pair<std::string, std::string> cases[] = {
      {"signal 9\noom_killed 67108864\n", "killed: out of memory (limit 64Mi)"},
      {"exit_code 1\noom_killed 1610612736\n",
       "exit status 1 (a process of the task was killed: out of memory, limit 1.5Gi)"},
      {"signal 9\nstopped 1\noom_killed 1000\n", "stopped: killed: out of memory (limit 1000)"}};
  int n = 0;
  ProcessSpec spec;
  spec.command = "true";
  for (const auto& [exit, message] : cases) {
    const std::string id = "oom." + std::to_string(++n);
    fs::create_directories(options.tasks_dir + "/" + id);
    std::ofstream(options.tasks_dir + "/" + id + "/exit") << exit;
    const TaskToRun task{id, "n1", std::nullopt, {}, &spec};
    executor.Start(task, Timestamp{});
    std::optional<Timestamp> due;
    const std::optional<Ended> ended = executor.Check(task, Timestamp{}, &due);
    ASSERT_TRUE(ended.has_value());
    EXPECT_TRUE(ended->failed);
    EXPECT_EQ(ended->message, message);
  }
  const ExitRecord record = *ParseExitRecord("signal 9\noom_killed 5\n");
  EXPECT_EQ(record.oom_limit, 5);
  EXPECT_EQ(ParseExitRecord(FormatExitRecord(record)), record);
}

// Real tasks under real limits: needs root and limits this machine can
// enforce. PrepareLimits sets the machine up as berth-node does (on
// cgroup v2 it moves this test process); TearDown removes berth's v1
// groups once empty.
class RealLimitsTest : public testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
    limits_ = PrepareLimits();
    if (!limits_.enforced) GTEST_SKIP() << "needs limits enforced here: " << limits_.reason;
    ProcessExecutorOptions options;
    options.tasks_dir = dir_.path() + "/tasks";
    options.shim_path = BERTH_EXEC_BINARY;
    options.cgroup_root = limits_.root;
    options.cgroup_v1_parents = limits_.v1_parents;
    options.pids_limits = limits_.pids;
    executor_.emplace(options);
  }

  void TearDown() override {
    KillAll();
    for (const std::string& id : ids_) {
      for (const std::string& cgroup : Cgroups(id)) {
        EXPECT_TRUE(Eventually([&] { return !fs::exists(cgroup); })) << cgroup << " is left";
        ::rmdir(cgroup.c_str());  // so that a failed test leaves nothing either
      }
    }
    ReleaseLimits(limits_);
  }

  const TaskToRun& Task(const std::string& id, const ProcessSpec* spec) {
    ids_.push_back(id);
    return tasks_.emplace_back(TaskToRun{ids_.back(), node_, no_run_, {}, spec});
  }

  // The task's cgroups, one per hierarchy (v1) or one (v2).
  std::vector<std::string> Cgroups(const std::string& id) const {
    std::vector<std::string> dirs;
    if (!limits_.root.empty()) dirs.push_back(limits_.root + "/task-" + id);
    for (const auto& [controller, parent] : limits_.v1_parents) {
      if (std::find(dirs.begin(), dirs.end(), parent + "/task-" + id) == dirs.end()) {
        dirs.push_back(parent + "/task-" + id);
      }
    }
    return dirs;
  }

  std::optional<PidRecord> Pids(const std::string& id) const {
    const std::optional<std::string> text = ReadSmallFile(executor_->LogDir(id) + "/pid");
    return text ? ParsePidRecord(*text) : std::nullopt;
  }

  // The CPU time the task's cgroup used so far, in ns: cpuacct.usage on
  // cgroup v1, cpu.stat's usage_usec on v2.
  std::optional<int64_t> CpuUsageNs(const std::string& id) const {
    if (!limits_.root.empty()) {
      const std::optional<int64_t> us =
          CgroupStat(limits_.root + "/task-" + id + "/cpu.stat", "usage_usec");
      return us ? std::optional<int64_t>(*us * 1000) : std::nullopt;
    }
    const auto it = limits_.v1_parents.find("cpuacct");
    if (it == limits_.v1_parents.end()) return std::nullopt;
    const std::optional<std::string> text =
        ReadSmallFile(it->second + "/task-" + id + "/cpuacct.usage");
    return text ? std::optional<int64_t>(std::atoll(text->c_str())) : std::nullopt;
  }

  // How many of its periods the CPU controller held the task back (cpu.stat
  // nr_throttled), or nullopt.
  std::optional<int64_t> ThrottledPeriods(const std::string& id) const {
    if (!limits_.root.empty())
      return CgroupStat(limits_.root + "/task-" + id + "/cpu.stat", "nr_throttled");
    const auto it = limits_.v1_parents.find("cpu");
    if (it == limits_.v1_parents.end()) return std::nullopt;
    return CgroupStat(it->second + "/task-" + id + "/cpu.stat", "nr_throttled");
  }

  void KillAll() {
    for (const std::string& id : ids_) {
      const std::optional<PidRecord> pids = Pids(id);
      if (!pids) continue;
      if (IsSameLiveProcess(pids->task_pid, pids->task_start_time)) {
        ::kill(-pids->task_pid, SIGKILL);
      }
      if (ProcessStartTime(pids->shim_pid) == pids->shim_start_time) {
        ::kill(pids->shim_pid, SIGKILL);
        ::waitpid(pids->shim_pid, nullptr, 0);
      }
      for (const std::string& cgroup : Cgroups(id)) KillCgroupProcs(cgroup);
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  // Whether the task's process has joined all its cgroups.
  bool Joined(const std::string& id) const {
    const std::optional<PidRecord> pids = Pids(id);
    if (!pids) return false;
    for (const std::string& cgroup : Cgroups(id)) {
      const std::vector<pid_t> procs = CgroupProcs(cgroup);
      if (std::find(procs.begin(), procs.end(), pids->task_pid) == procs.end()) return false;
    }
    return true;
  }

  store::TestDir dir_;
  LimitsSupport limits_;
  std::optional<ProcessExecutor> executor_;
  std::deque<std::string> ids_;
  // TaskToRun holds references: what they name outlives the tasks.
  const std::string node_ = "n1";
  const std::optional<SimulatedRun> no_run_;
  std::deque<TaskToRun> tasks_;
};

TEST_F(RealLimitsTest, AMemoryHogIsKilledAtItsLimitAndTheTaskSaysSo) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3 to eat memory";
  ProcessSpec spec;
  spec.command = "/usr/bin/python3";
  spec.args = {"-c", "b = b'x' * (300 << 20); print('survived')"};
  spec.limit_memory = 64 << 20;
  const TaskToRun& task = Task("hog.1", &spec);
  executor_->Start(task, Timestamp{});
  ASSERT_TRUE(Changes(*executor_, "hog.1"));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = executor_->Check(task, Timestamp{}, &due);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->failed);
  EXPECT_EQ(ended->message, "killed: out of memory (limit 64Mi)");
  for (const std::string& cgroup : Cgroups("hog.1")) EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
}

// The busy loop would take a whole core; its cgroup's CPU time over about
// a second of wall-clock time is at most half of it, and half of it or
// throttled by its limit.
TEST_F(RealLimitsTest, ACpuBoundTaskWithLimitHalfGetsHalfACore) {
  ProcessSpec spec;
  spec.command = "sh";
  spec.args = {"-c", "while :; do :; done"};
  spec.limit_cpu = 0.5;
  spec.stop_grace_period = std::chrono::seconds(0);
  const TaskToRun& task = Task("cpu.1", &spec);
  executor_->Start(task, Timestamp{});
  ASSERT_TRUE(Eventually([&] { return Joined("cpu.1"); }));
  const std::optional<int64_t> used_before = CpuUsageNs("cpu.1");
  if (!used_before) GTEST_SKIP() << "no CPU accounting for the task's cgroup here";
  const std::optional<int64_t> throttled_before = ThrottledPeriods("cpu.1");
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the interval measured
  const std::optional<int64_t> used_after = CpuUsageNs("cpu.1");
  const std::optional<int64_t> throttled_after = ThrottledPeriods("cpu.1");
  const int64_t wall_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(used_after.has_value());
  const double cores = static_cast<double>(*used_after - *used_before) / wall_ns;
  EXPECT_LE(cores, 0.6);
  // Half a core, unless the other tests on a loaded machine took its share:
  // then the controller must still have held it back in some period (its
  // limit, not the load, is what binds when it runs).
  const bool throttled =
      throttled_before && throttled_after && *throttled_after > *throttled_before;
  EXPECT_TRUE(cores >= 0.4 || throttled) << cores << " cores, and never throttled";
  executor_->Stop(task);
  ASSERT_TRUE(Changes(*executor_, "cpu.1"));
  std::optional<Timestamp> due;
  EXPECT_EQ(executor_->Check(task, Timestamp{}, &due)->message,
            "stopped: killed by signal 9 (SIGKILL)");
}

// The task forks until a fork fails, each child waiting for the parent's
// end: with 8 pids at most, the fork that would make the ninth process
// fails (EAGAIN), and the task says so and exits 3. Without the limit all
// 20 forks would succeed and it would exit 0.
TEST_F(RealLimitsTest, AForkBeyondThePidsLimitFails) {
  if (!limits_.pids) GTEST_SKIP() << "needs pids limits enforced here: " << limits_.pids_reason;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3 to fork";
  ProcessSpec spec;
  spec.command = "/usr/bin/python3";
  spec.args = {"-c", kForkUntilRefused};
  spec.limit_pids = 8;
  const TaskToRun& task = Task("forky.1", &spec);
  executor_->Start(task, Timestamp{});
  ASSERT_TRUE(Changes(*executor_, "forky.1"));
  std::optional<Timestamp> due;
  const std::optional<Ended> ended = executor_->Check(task, Timestamp{}, &due);
  ASSERT_TRUE(ended.has_value());
  const std::string log = ReadSmallFile(executor_->LogDir("forky.1") + "/output.log").value_or("");
  EXPECT_EQ(ended->message, "exit status 3") << log;
  EXPECT_NE(log.find("forked 7, then: Resource temporarily unavailable"), std::string::npos) << log;
  for (const std::string& cgroup : Cgroups("forky.1")) EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
}

// A killed supervisor leaves the task and its cgroups: the executor kills
// what is in them, also a process that left the task's group, and removes
// them; the next PrepareLimits removes an empty task group left behind.
TEST_F(RealLimitsTest, NoCgroupIsLeftWhenTheSupervisorIsKilled) {
  ProcessSpec spec;
  spec.command = "sh";
  spec.args = {"-c", "setsid sleep 1000 & echo $!; exec sleep 1000"};
  spec.limit_memory = 64 << 20;
  spec.limit_cpu = 1;
  const TaskToRun& task = Task("kill.1", &spec);
  executor_->Start(task, Timestamp{});
  ASSERT_TRUE(Eventually(
      [&] { return Joined("kill.1") && CgroupProcs(Cgroups("kill.1").front()).size() == 2; }));
  const std::vector<pid_t> procs = CgroupProcs(Cgroups("kill.1").front());
  const std::optional<PidRecord> pids = Pids("kill.1");
  ASSERT_TRUE(pids.has_value());
  for (const std::string& cgroup : Cgroups("kill.1")) {
    EXPECT_TRUE(RemoveDeadHolders(cgroup)) << cgroup << " is not held by its live supervisor";
  }
  ::kill(pids->shim_pid, SIGKILL);
  ASSERT_TRUE(Changes(*executor_, "kill.1"));
  std::optional<Timestamp> due;
  EXPECT_EQ(executor_->Check(task, Timestamp{}, &due)->message,
            "the task's supervisor died without an exit status (it was killed by signal 9 "
            "(SIGKILL))");
  for (const std::string& cgroup : Cgroups("kill.1")) EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
  for (pid_t pid : procs) {
    EXPECT_TRUE(Eventually([&] {
      const std::optional<ProcStat> stat = ReadProcStat(pid);
      return !stat || stat->state == 'Z';
    })) << pid;
  }
  ids_.push_back("stale.1");
  for (const std::string& cgroup : Cgroups("stale.1")) ASSERT_TRUE(fs::create_directory(cgroup));
  limits_ = PrepareLimits();
  for (const std::string& cgroup : Cgroups("stale.1")) EXPECT_FALSE(fs::exists(cgroup)) << cgroup;
}

}  // namespace cgroup_limits_test
}  // namespace berth::executor
