// ProcessExecutor: the Executor of berth-node, which runs each task as a
// process of the machine. Every task gets a directory, <tasks_dir>/<task
// id>/ (task_dir.h), and a shim of its own, berth-exec (task_shim.h), that
// runs the task's command, keeps its output log and writes how it ended.
// The shims are not tied to berth-node: a berth-node that restarts finds
// its tasks still running and takes them back (Adopt), or finds how they
// ended in their directories.
//
// Start spawns the shim (posix_spawn, so berth-node may have threads) and
// answers at once; the shim then reports a command that cannot run as a
// rejection. TakeChanged names the tasks whose shim exited, found by
// waitpid on the shims this process spawned (which also reaps them) and by
// pid and start time (proc_stat.h) for the ones it adopted. A task ends
// with what its shim wrote: "completed (exit status 0)", "exit status 3",
// "killed by signal 9 (SIGKILL)", the rejection; prefixed by "stopped: "
// when Stop came first. Ended::failed is whether that is not an exit
// status of 0, stopped or not. A shim that dies without saying (killed,
// the machine restarted) ends its task as failed, and a task process that
// outlived it is killed.
//
// The task runs with the environment berth-node has, then the spec's env,
// then BERTH_TASK_ID and BERTH_NODE_ID, which a spec cannot override: a
// task can trust them to name it. Its workdir is the spec's (relative to
// the task's directory) or the task's directory.
//
// Resource limits (a spec's limit_cpu, limit_memory and limit_pids) are
// applied with cgroups where the node can: PrepareLimits below, called once
// as berth-node starts, finds cgroup v2 (berth-node's own cgroup delegated
// to it with the cpu and memory controllers, and pids when there) or else
// cgroup v1's memory and cpu controllers (and pids when mounted), and sets
// up berth's groups. Its `root` (v2) goes to
// ProcessExecutorOptions::cgroup_root, its `v1_parents` to
// cgroup_v1_parents, its `pids` to pids_limits. A task with a limit then
// runs in <cgroup_root>/task-<id>, with cpu.max ("<limit_cpu * 100000, at
// least 1000> 100000"), memory.max and pids.max, or in <parent>/task-<id>
// of each v1 hierarchy, with cpu.cfs_period_us, cpu.cfs_quota_us,
// memory.limit_in_bytes and pids.max, set before the task's command runs:
// its shim (task_shim.h) makes the cgroups, rejects the task when it
// cannot apply a limit, kills whatever is left in them when the task
// ends, and removes them. An OOM kill in the task's cgroup ends it as
// "killed: out of memory (limit 64Mi)"; a fork beyond the pids limit fails
// in the task (EAGAIN), which goes on as it decides. When the shim died,
// the executor kills what is left in the task's cgroups and removes them
// as it reports the task failed. A task without limits runs in
// berth-node's cgroup, as before.
//
// Without either (no cgroups, no delegation, no controllers: the node
// reports PrepareLimits's reason with its registration, and berthd's
// limits filter places no task with limits there), a task with limits
// runs all the same, unconstrained: the limits are not enforced.
//
// Not thread-safe: one thread (berth-node's supervision thread) makes every
// call. Nothing else in berth-node may wait for children with waitpid(-1)
// (it would reap shims from under the executor). ReadLog (log_files.h) on
// LogDir may run on any thread meanwhile.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "executor/executor.h"

namespace berth::executor {

struct ProcessExecutorOptions {
  std::string tasks_dir;  // one directory per task under it; created when missing. Required.
  std::string shim_path;  // the berth-exec program. Required.
  int64_t log_max_bytes = 10 << 20;  // per output log file
  int log_max_files = 3;             // output log files kept per task, output.log included
  // Where tasks with limits get their cgroup (<cgroup_root>/task-<id>):
  // PrepareLimits's root. "": limits are not applied.
  std::string cgroup_root;
  // cgroup v1 instead (PrepareLimits's v1_parents): each controller's
  // berth-owned group, under which a task with limits gets
  // <parent>/task-<id>. Used only when cgroup_root is "".
  std::map<std::string, std::string> cgroup_v1_parents;
  // Whether those cgroups take pids limits too (PrepareLimits's pids): a
  // spec's limit_pids is applied only then.
  bool pids_limits = false;
};

// What Adopt found in a task directory.
struct AdoptedTask {
  std::string id;
  bool running = false;  // false: it ended (Check says how)
  bool operator==(const AdoptedTask&) const = default;
};

class ProcessExecutor final : public Executor {
 public:
  explicit ProcessExecutor(ProcessExecutorOptions options);

  // Starts the task's shim, or answers for the task as it stands when its
  // directory shows it started before (running, or ended: Check says how),
  // so a task is never started twice. A task without a command or with an
  // id that cannot name a directory is rejected: Start says so, and Check
  // reports it as rejected.
  std::optional<std::string> Start(const TaskToRun& task, Timestamp now) override;
  // Never sets *due: a task's end comes through TakeChanged.
  std::optional<Ended> Check(const TaskToRun& task, Timestamp now,
                             std::optional<Timestamp>* due) override;
  // Asks the shim to stop the task (SIGTERM, then SIGKILL after the spec's
  // stop_grace_period); with no shim left, kills the task's processes.
  void Stop(const TaskToRun& task) override;
  std::vector<std::string> TakeChanged() override;

  // After a restart of berth-node: every task directory under tasks_dir,
  // by id, and whether its task is still running, in which case the
  // executor watches it as one it started.
  Result<std::vector<AdoptedTask>> Adopt();
  // Deletes the task's directory, once berth-node needs neither its exit
  // nor its log; Conflict while the task runs, OK when there is none.
  Status Remove(const std::string& id);
  // Where the task's output log is (ReadLog, log_files.h).
  std::string LogDir(const std::string& id) const;

 private:
  // A shim this executor watches; `running` until it is seen gone.
  struct Shim {
    pid_t pid = 0;
    uint64_t start_time = 0;
    bool own_child = false;  // spawned by this process: waitpid tells, and reaps
    bool running = true;
    std::optional<int> wait_status;  // when this process reaped it
  };

  std::string Spawn(const TaskToRun& task, const std::string& dir);
  void AddLimitArgs(const TaskToRun& task, std::vector<std::string>* args) const;
  std::string Reject(const std::string& id, const std::string& why);
  bool Poll(Shim& shim);
  Shim* Watch(const std::string& id);
  std::optional<Ended> Outcome(const TaskToRun& task, Timestamp now, const Shim* shim);
  std::vector<std::string> CgroupsOf(const std::string& id) const;
  void ReleaseCgroups(const std::string& id);

  ProcessExecutorOptions options_;
  std::map<std::string, Shim> shims_;
  std::map<std::string, std::string> rejected_;  // id -> why it did not start
  std::vector<std::string> changed_;
};

// Whether this node can enforce a task's cpu and memory limits, and if not
// why (for the node's status).
struct LimitsSupport {
  bool enforced = false;
  std::string reason;      // why not ("...: limits are not enforced"); "" when enforced
  int cgroup_version = 0;  // 1 or 2 when enforced
  // cgroup v2: the directory under which task cgroups are made; "" otherwise.
  std::string root;
  // cgroup v1: berth's group in each hierarchy a task joins, by controller
  // ("memory" -> "/sys/fs/cgroup/memory/berth"; "cpu", and "cpuacct" and
  // "pids" when mounted); empty otherwise.
  std::map<std::string, std::string> v1_parents;
  // Whether pids limits are enforced too: the pids controller (v1: mounted,
  // with berth's group in v1_parents; v2: in root's cgroup.controllers and
  // enabled for its children); if not, why (pids_reason).
  bool pids = false;
  std::string pids_reason;
};

// Checks that limits can be enforced, with cgroup v2 or else v1, and if so
// prepares the cgroups for them. With cgroup v2 they are when all of
// these hold:
//   - `cgroup_fs` is a cgroup2 filesystem;
//   - this process's group (the "0::" line of `self_cgroup_file`, under
//     `cgroup_fs`) is delegated to it: the directory, its cgroup.procs and
//     its cgroup.subtree_control are writable;
//   - its cgroup.controllers lists cpu and memory.
// Then, since a cgroup v2 group with processes of its own cannot pass
// controllers to its children, every process of that group (berth-node
// and any other) moves to a new child group, <own>/berth-node, and
// "+cpu +memory" goes to <own>/cgroup.subtree_control, then "+pids" when
// cgroup.controllers lists pids (`pids`; without it, `pids_reason`);
// `root` is <own>.
// The first check or step that fails gives `reason` and enforced=false.
//
// When `cgroup_fs` is not cgroup2 but `mounts_file` (/proc/mounts) shows
// the cgroup v1 controllers memory and cpu mounted (and writable: this
// process runs as root), each of them, and cpuacct and pids when mounted
// (`pids`), gets a group of berth's own, <mount>/berth, made when missing:
// v1_parents. v1
// needs no delegation nor moving processes: a task joins one group per
// hierarchy. The v1 hierarchies are shared with the rest of the machine
// (Docker's /docker is beside berth's), so berth-node's own cgroups are
// left alone.
//
// Either way, the task groups left under berth's groups by a shim that was
// killed (task-<id>, now empty) are removed; a group that still has
// processes (a running task the node adopts), or that a live shim holds
// (RemoveStaleTaskCgroups, cgroup_files.h), stays.
//
// Call it once, as berth-node starts, on its single thread before any
// other starts: it moves the whole process, all threads, to another group.
// The arguments are for tests.
LimitsSupport PrepareLimits(std::string_view cgroup_fs = "/sys/fs/cgroup",
                            std::string_view self_cgroup_file = "/proc/self/cgroup",
                            std::string_view mounts_file = "/proc/mounts");

// As berth-node stops: berth's cgroup v1 groups (v1_parents) are removed
// when they hold no task's group, so that a node that runs nothing leaves
// no cgroup behind. One that tasks still use stays (they outlive
// berth-node); the next PrepareLimits finds it, and a shim makes it
// again when it is missing.
void ReleaseLimits(const LimitsSupport& limits);

// The path of this process's cgroup v2 group, from the text of
// /proc/self/cgroup: the "0::<path>" line's path ("/a/b"; "/" for the
// root). nullopt when there is no such line (only cgroup v1 hierarchies)
// or its path is not absolute.
std::optional<std::string> OwnCgroupPath(std::string_view proc_self_cgroup_text);

// Whether `id` can name a task's directory: not empty, no '/', no leading
// '.' (so neither "." nor ".." nor a hidden file), at most 255 bytes.
bool IsValidTaskDirName(const std::string& id);

}  // namespace berth::executor
