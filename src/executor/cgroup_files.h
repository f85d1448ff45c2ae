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

}  // namespace berth::executor
