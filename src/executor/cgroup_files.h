// Small helpers for cgroup files (v1 and v2), shared by PrepareLimits and
// ProcessExecutor (process_executor.h) and the task shim (task_shim.h).
// Linux only; plain functions, any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace berth::executor {

// Writes `text` to the existing file `path` in one write(2): the kernel
// takes each write to a cgroup file as one command ("+cpu +memory", a
// pid, "50000 100000"). 0, or the errno of what failed.
int WriteCgroupFile(const std::string& path, std::string_view text);

// The pids listed in `dir`/cgroup.procs; empty when it cannot be read.
std::vector<pid_t> CgroupProcs(const std::string& dir);

// The mount point of each cgroup v1 controller, from the text of
// /proc/mounts: {"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": (the
// same), "memory": "/sys/fs/cgroup/memory", ...}. Named hierarchies
// ("name=systemd") and cgroup2 mounts are left out; the first mount of a
// controller wins.
std::map<std::string, std::string> CgroupV1Mounts(std::string_view proc_mounts_text);

// Sends SIGKILL to every process `dir`/cgroup.procs lists (v1 or v2), each
// by a pidfd taken before the pid is seen listed again, so that a pid
// reused meanwhile by a process outside the cgroup is not signalled.
void KillCgroupProcs(const std::string& dir);

// The value of `key` in a cgroup file of "<key> <value>" lines
// (memory.events, memory.oom_control, cpu.stat); nullopt when the file or
// the key is missing.
std::optional<int64_t> CgroupStat(const std::string& file, std::string_view key);

// A task's supervisor holds each of its task's groups with an empty child
// group named for itself, "shim-<pid>-<start time>" (start time in clock
// ticks after boot, as /proc/<pid>/stat's field 22): a group with a child
// cannot be removed, so another node's sweep of stale groups leaves it
// while the supervisor lives, even once the task has exited and the group
// is empty (the supervisor still reads its oom_kill count then).
std::string HolderName(pid_t pid, uint64_t start_time);

// Removes the holders in `group` whose process is gone; whether a live
// one is left.
bool RemoveDeadHolders(const std::string& group);

// Removes `parent`/task-* groups that no live supervisor holds: a holder
// whose process is gone is removed first; a group with processes in it (a
// running task whose supervisor was killed) still stays, as rmdir refuses.
void RemoveStaleTaskCgroups(const std::string& parent);

}  // namespace berth::executor
