// Small helpers for cgroup v2 files, shared by PrepareLimits
// (process_executor.h) and the task shim (task_shim.h). Linux only; plain
// functions, any thread.
#pragma once

#include <sys/types.h>

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

}  // namespace berth::executor
