// The process fields of a task template (docs/api.md, "task template"): how
// a berth-node machine runs the task.
//
//   "command": "python3", "args": ["-m", "http.server"],
//   "env": ["PORT=8080"], "workdir": "/srv",
//   "stop_grace_period": "10s",
//   "limits": {"cpu": 0.5, "memory": "256Mi", "pids": 100}
//
// All optional; without "command" the template has no process (the
// simulated executor runs its tasks), and the other fields need it. The
// placement engine ignores them. Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "executor/process_spec.h"

namespace berth::api {

// The largest pids limit: Linux's PID_MAX_LIMIT (4194304), the most pids
// a machine can have.
inline constexpr int64_t kMaxPidsLimit = 4 * 1024 * 1024;

// The names DecodeTaskSpec lets through for DecodeProcessSpec.
inline constexpr const char* kProcessFields[] = {"command",           "args",  "env", "workdir",
                                                 "stop_grace_period", "limits"};

// Reads the process fields of `task` (a task template object; other fields
// are left to DecodeTaskSpec). *out is nullopt when there is no "command".
Status DecodeProcessSpec(const Json& task, const std::string& path,
                         std::optional<executor::ProcessSpec>* out);
// The fields of `spec` (defaults left out but "command"), for merging into
// a template or sending to a node.
Json EncodeProcessSpec(const executor::ProcessSpec& spec);

// A run id (core/task.h RunIdOf): a task id, with "~<attempt>" from a job
// task's second run on.
Status ReadRunId(const Json& value, const std::string& path, std::string* out);

// A job's per-task command lines (docs/api.md, "jobs"): "commands", one
// entry per task, each the program then its arguments:
//   "commands": [["make", "shard-1"], ["sh", "-c", "exit 3"]]
// Each word follows the rules of "command" (the first) and "args".
Status DecodeCommands(const Json& value, const std::string& path,
                      std::vector<std::vector<std::string>>* out);
// The process fields a job's template gives every task when the job has
// "commands": all but "command" and "args", which are refused there (one
// place says what a task runs). Without process fields, the defaults.
Status DecodeSharedProcess(const Json& task, const std::string& path, executor::ProcessSpec* out);
// `shared` running `argv`: argv[0] is the program, the rest its arguments.
executor::ProcessSpec WithCommandLine(executor::ProcessSpec shared,
                                      const std::vector<std::string>& argv);
// `task` without the process fields: the placement part of a template whose
// process DecodeSharedProcess reads (DecodeTaskSpec wants "command" with them).
Json WithoutProcessFields(Json task);

// A job's per-task arguments (docs/api.md, "jobs"): `{{.Index}}` (spaces
// allowed inside the braces) in `text` becomes `index`, the task's 1-based
// index, as Docker's `{{.Task.Slot}}` does for a service. Any other `{{`
// is an error naming it, so a typo never reaches a node as literal text.
Result<std::string> ExpandIndex(std::string_view text, int64_t index);
// `spec` with ExpandIndex applied to its args and to the values of its env
// entries; the error names the field under `path` (e.g. "task.args[1]").
Result<executor::ProcessSpec> ExpandProcessIndex(const executor::ProcessSpec& spec,
                                                 const std::string& path, int64_t index);
// Whether `spec`'s args or env hold a `{{` (ExpandProcessIndex changes it).
bool HasIndexTemplate(const executor::ProcessSpec& spec);

}  // namespace berth::api
