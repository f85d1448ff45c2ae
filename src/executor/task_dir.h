// The files of a task's directory (<tasks_dir>/<task id>/), which the task's
// shim (berth-exec, task_shim.h) writes and ProcessExecutor reads, also
// after a restart of berth-node:
//
//   pid          "<task pid> <task start> <shim pid> <shim start>\n", start
//                times as /proc gives them (proc_stat.h); there once the
//                task's process exists
//   exit         how the task ended (ExitRecord below); written once, as
//                the shim's last act
//   output.log*  the task's output (log_files.h)
//   shim.log     the shim's own messages (its stdout and stderr)
//   env          the task's environment, mode 0600, until the shim has read
//                it (EnvFile below)
//
// pid and exit are written whole to a temporary file that is then renamed,
// so a reader sees all of one or nothing.
//
// The exit file: lines of "<key> <value>", in this order:
//
//   exit_code <n>        | signal <n>  | rejected <why, one line>
//   stopped 1            only when a stop was asked for before the end
//   oom_killed <bytes>   only when the kernel killed a process of the task
//                        for going over its memory limit, <bytes>
//   started_at_ms <ms>   unix time the task's process started; not when rejected
//   finished_at_ms <ms>  unix time the shim saw the task end
//
// Readers ignore keys they do not know. Plain functions; any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace berth::executor {

inline constexpr char kPidFile[] = "pid";
inline constexpr char kExitFile[] = "exit";
inline constexpr char kShimLogFile[] = "shim.log";
inline constexpr char kEnvFile[] = "env";

struct PidRecord {
  pid_t task_pid = 0;
  uint64_t task_start_time = 0;
  pid_t shim_pid = 0;
  uint64_t shim_start_time = 0;
  bool operator==(const PidRecord&) const = default;
};

std::string FormatPidRecord(const PidRecord& record);
std::optional<PidRecord> ParsePidRecord(std::string_view text);

// How a task ended: exactly one of exit_code, signal and rejected is set.
struct ExitRecord {
  std::optional<int> exit_code;         // it exited by itself
  std::optional<int> signal;            // a signal killed it
  std::optional<std::string> rejected;  // it never ran: why ("cannot run 'x': ...")
  bool stopped = false;                 // a stop was asked for before it ended
  // The memory limit, when the kernel killed a process of the task (the
  // main one or another) for going over it.
  std::optional<int64_t> oom_limit;
  int64_t started_at_ms = 0;   // unix ms; 0: not known
  int64_t finished_at_ms = 0;  // unix ms; 0: not known
  bool operator==(const ExitRecord&) const = default;
};

// The env file: each "NAME=VALUE" entry ended by a NUL (a value may hold a
// newline). ProcessExecutor writes it with mode 0600 and berth-exec reads
// and removes it before the task runs, so that no value stands in a
// command line, which /proc/PID/cmdline shows every local user.
std::string FormatEnvFile(const std::vector<std::string>& entries);
// nullopt when an entry lacks its NUL or is not NAME=VALUE with a name.
std::optional<std::vector<std::string>> ParseEnvFile(std::string_view text);

std::string FormatExitRecord(const ExitRecord& record);
// nullopt when `text` is not an exit record (none or several outcomes).
std::optional<ExitRecord> ParseExitRecord(std::string_view text);

// Writes `content` to path + ".tmp", syncs it and renames it to `path`.
// `mode`: the file's permissions (0600 for a secret).
Status WriteFileAtomically(const std::string& path, std::string_view content, mode_t mode = 0644);
// The whole of a small file; nullopt when it is missing or unreadable.
std::optional<std::string> ReadSmallFile(const std::string& path);

}  // namespace berth::executor
