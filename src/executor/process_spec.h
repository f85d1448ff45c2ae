// ProcessSpec: how a task runs as a process on a berth-node machine (the
// task template's `command`, `args`, `env`, `workdir`, `stop_grace_period`
// and `limits`, docs/api.md "task template"). A value type; berthd carries
// it from the service to the node, the node's ProcessExecutor runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"

namespace berth::executor {

struct ProcessSpec {
  std::string command;            // the program; looked up in PATH when it has no '/'
  std::vector<std::string> args;  // after the program's name (argv[1..])
  // "NAME=value" entries added to berth-node's own environment (a later
  // entry of a name wins). Default: none.
  std::vector<std::string> env;
  std::string workdir;  // "": the task's own directory under the node's data directory
  // Between SIGTERM to the task's process group and SIGKILL, as Docker's
  // --stop-grace-period. Default 10 s.
  Duration stop_grace_period = std::chrono::seconds(10);
  // Resource limits, applied with cgroups where the node can (see
  // ProcessExecutor); absent: none. CPU in cores, memory in bytes, pids in
  // processes (and threads) the task may have at once.
  std::optional<double> limit_cpu;
  std::optional<int64_t> limit_memory;
  std::optional<int64_t> limit_pids;
  // Whether any limit is set (the task needs cgroups, and a node that
  // enforces limits).
  bool HasLimits() const { return limit_cpu || limit_memory || limit_pids; }
  bool operator==(const ProcessSpec&) const = default;
};

}  // namespace berth::executor
