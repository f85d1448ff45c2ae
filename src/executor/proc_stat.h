// What /proc says of a process: its state and start time (proc(5),
// /proc/<pid>/stat fields 3 and 22). A pid alone does not name a process
// for long: once it exits and is reaped, the kernel may give the number to
// another. The pid together with the start time does, so a pid recorded in
// a file (a task's, its supervisor's) is checked with both before it is
// signalled. Linux only; plain functions, safe from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace berth::executor {

struct ProcStat {
  char state = '?';         // 'R', 'S', 'D', 'Z' (exited, not yet reaped), ...
  pid_t parent = 0;         // field 4, ppid
  uint64_t start_time = 0;  // clock ticks after boot
};

// nullopt when there is no such process (or /proc cannot be read).
std::optional<ProcStat> ReadProcStat(pid_t pid);

// The start time alone; nullopt as above.
std::optional<uint64_t> ProcessStartTime(pid_t pid);

// Whether `pid` still names the process that started at `start_time` and
// that process has not exited: a zombie counts as exited, since only its
// exit status is left.
bool IsSameLiveProcess(pid_t pid, uint64_t start_time);

}  // namespace berth::executor
