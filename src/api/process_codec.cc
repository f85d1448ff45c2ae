#include "api/process_codec.h"

#include <algorithm>

#include "api/lifecycle_codec.h"
#include "core/names.h"
#include "core/task.h"

namespace berth::api {
namespace {

constexpr size_t kMaxArgs = 1024;
constexpr size_t kMaxArgBytes = 64 * 1024;
constexpr Duration kMaxGrace = std::chrono::hours(8760);  // berth-exec's bound

// An argument or environment entry: any text but NUL, within a bound (the
// kernel's argv limits are far above what a template should carry).
Status ReadArg(const Json& value, const std::string& path, std::string* out) {
  BERTH_RETURN_IF_ERROR(ReadString(value, path, out));
  if (out->size() > kMaxArgBytes)
    return FieldError(path, "longer than " + std::to_string(kMaxArgBytes) + " bytes");
  if (out->find('\0') != std::string::npos) return FieldError(path, "contains a NUL character");
  return Status::Ok();
}

Status ReadArgs(const Json& value, const std::string& path, std::vector<std::string>* out) {
  BERTH_RETURN_IF_ERROR(ReadList(value, path, ReadArg, out));
  if (out->size() > kMaxArgs)
    return FieldError(path, "more than " + std::to_string(kMaxArgs) + " entries");
  return Status::Ok();
}

bool IsEnvName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Status ReadEnv(const Json& value, const std::string& path, std::vector<std::string>* out) {
  BERTH_RETURN_IF_ERROR(ReadArgs(value, path, out));
  for (size_t i = 0; i < out->size(); ++i) {
    const std::string& entry = (*out)[i];
    const size_t eq = entry.find('=');
    // The error names the entry's name, never its value: it may be a secret.
    if (eq == std::string::npos)
      return FieldError(IndexPath(path, i), "expected NAME=value, got no '='");
    if (!IsEnvName(std::string_view(entry).substr(0, eq)))
      return FieldError(IndexPath(path, i),
                        "expected NAME=value with NAME of letters, digits and '_', got the name '" +
                            entry.substr(0, std::min<size_t>(eq, 64)) + "'");
  }
  return Status::Ok();
}

Status ReadCommand(const Json& value, const std::string& path, std::string* out) {
  BERTH_RETURN_IF_ERROR(ReadArg(value, path, out));
  return out->empty() ? FieldError(path, "must not be empty") : Status::Ok();
}

Status ReadWorkdir(const Json& value, const std::string& path, std::string* out) {
  BERTH_RETURN_IF_ERROR(ReadArg(value, path, out));
  if (!out->empty() && out->front() != '/')
    return FieldError(path, "must be an absolute path, got '" + out->substr(0, 64) + "'");
  return Status::Ok();
}

// A pids limit: a whole number of processes, at most the kernel's own
// most (PID_MAX_LIMIT), above which pids.max means nothing.
Status ReadPidsLimit(const Json& value, const std::string& path, int64_t* out) {
  int64_t pids = 0;
  const bool whole = ReadInteger(value, path, &pids).ok();
  if (!whole && !value.is_number()) return TypeError(value, path, "a whole number of processes");
  if (!whole || pids < 1 || pids > kMaxPidsLimit)
    return FieldError(path, "expected a whole number of processes from 1 to " +
                                std::to_string(kMaxPidsLimit) + ", got " + value.dump());
  *out = pids;
  return Status::Ok();
}

Status ReadLimits(const Json& value, const std::string& path, executor::ProcessSpec* spec) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"cpu", "memory", "pids"}));
  int64_t milli_cpu = 0, memory = 0, pids = 0;
  BERTH_RETURN_IF_ERROR(ReadField(value, "cpu", path, ReadMilliCpu, &milli_cpu));
  BERTH_RETURN_IF_ERROR(ReadField(value, "memory", path, ReadBytes, &memory));
  BERTH_RETURN_IF_ERROR(ReadField(value, "pids", path, ReadPidsLimit, &pids));
  if (value.contains("cpu") && milli_cpu <= 0)
    return FieldError(FieldPath(path, "cpu"), "must be above 0");
  if (value.contains("memory") && memory <= 0)
    return FieldError(FieldPath(path, "memory"), "must be above 0");
  if (value.contains("cpu")) spec->limit_cpu = static_cast<double>(milli_cpu) / 1000.0;
  if (value.contains("memory")) spec->limit_memory = memory;
  if (value.contains("pids")) spec->limit_pids = pids;
  return Status::Ok();
}

// The process fields but "command" and "args": what a job's tasks share
// when each has its own command line ("commands").
Status ReadSharedFields(const Json& task, const std::string& path, executor::ProcessSpec* spec) {
  BERTH_RETURN_IF_ERROR(ReadField(task, "env", path, ReadEnv, &spec->env));
  BERTH_RETURN_IF_ERROR(ReadField(task, "workdir", path, ReadWorkdir, &spec->workdir));
  BERTH_RETURN_IF_ERROR(
      ReadField(task, "stop_grace_period", path, ReadDuration, &spec->stop_grace_period));
  if (spec->stop_grace_period > kMaxGrace)
    return FieldError(FieldPath(path, "stop_grace_period"), "must be at most 8760h (a year)");
  if (auto limits = task.find("limits"); limits != task.end())
    BERTH_RETURN_IF_ERROR(ReadLimits(*limits, FieldPath(path, "limits"), spec));
  return Status::Ok();
}

// One entry of "commands": the program, then at most kMaxArgs arguments.
Status ReadCommandLine(const Json& value, const std::string& path, std::vector<std::string>* out) {
  BERTH_RETURN_IF_ERROR(ReadList(value, path, ReadArg, out));
  if (out->empty()) return FieldError(path, "must not be empty (the program, then its arguments)");
  if (out->front().empty()) return FieldError(IndexPath(path, 0), "must not be empty");
  if (out->size() > kMaxArgs + 1)
    return FieldError(path, "more than " + std::to_string(kMaxArgs + 1) + " entries");
  return Status::Ok();
}

}  // namespace

Status DecodeProcessSpec(const Json& task, const std::string& path,
                         std::optional<executor::ProcessSpec>* out) {
  if (!task.is_object()) return TypeError(task, path, "an object");
  if (!task.contains("command")) {
    for (const char* field : kProcessFields)
      if (task.contains(field))
        return FieldError(FieldPath(path, field), "needs \"command\" (the program to run)");
    out->reset();
    return Status::Ok();
  }
  executor::ProcessSpec spec;
  BERTH_RETURN_IF_ERROR(ReadField(task, "command", path, ReadCommand, &spec.command));
  BERTH_RETURN_IF_ERROR(ReadField(task, "args", path, ReadArgs, &spec.args));
  BERTH_RETURN_IF_ERROR(ReadSharedFields(task, path, &spec));
  *out = std::move(spec);
  return Status::Ok();
}

Status DecodeSharedProcess(const Json& task, const std::string& path, executor::ProcessSpec* out) {
  if (!task.is_object()) return TypeError(task, path, "an object");
  for (const char* field : {"command", "args"})
    if (task.contains(field))
      return FieldError(FieldPath(path, field),
                        "not with \"commands\" (each task's program and arguments are its "
                        "entry of \"commands\")");
  *out = executor::ProcessSpec{};
  return ReadSharedFields(task, path, out);
}

Status DecodeCommands(const Json& value, const std::string& path,
                      std::vector<std::vector<std::string>>* out) {
  return ReadList(value, path, ReadCommandLine, out);
}

executor::ProcessSpec WithCommandLine(executor::ProcessSpec shared,
                                      const std::vector<std::string>& argv) {
  shared.command = argv.empty() ? std::string() : argv.front();
  shared.args.assign(argv.empty() ? argv.end() : argv.begin() + 1, argv.end());
  return shared;
}

Json WithoutProcessFields(Json task) {
  if (task.is_object())
    for (const char* field : kProcessFields) task.erase(field);
  return task;
}

Json EncodeProcessSpec(const executor::ProcessSpec& spec) {
  Json j = {{"command", spec.command}};
  if (!spec.args.empty()) j["args"] = spec.args;
  if (!spec.env.empty()) j["env"] = spec.env;
  if (!spec.workdir.empty()) j["workdir"] = spec.workdir;
  if (spec.stop_grace_period != executor::ProcessSpec{}.stop_grace_period)
    j["stop_grace_period"] = FormatDuration(spec.stop_grace_period);
  if (spec.limit_cpu) j["limits"]["cpu"] = *spec.limit_cpu;
  if (spec.limit_memory) j["limits"]["memory"] = *spec.limit_memory;
  if (spec.limit_pids) j["limits"]["pids"] = *spec.limit_pids;
  return j;
}

namespace {

constexpr std::string_view kIndexName = ".Index";

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::string> ExpandIndex(std::string_view text, int64_t index) {
  std::string out;
  for (size_t at = 0;;) {
    const size_t open = text.find("{{", at);
    out.append(text.substr(at, open == std::string_view::npos ? open : open - at));
    if (open == std::string_view::npos) return out;
    const size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos)
      return Status::InvalidArgument("'{{' is not closed by '}}' (only {{.Index}} expands)");
    const std::string_view name = Trimmed(text.substr(open + 2, close - open - 2));
    if (name != kIndexName)
      return Status::InvalidArgument("unknown template '" +
                                     std::string(text.substr(open, close + 2 - open)) +
                                     "' (only {{.Index}} expands)");
    out += std::to_string(index);
    at = close + 2;
  }
}

Result<executor::ProcessSpec> ExpandProcessIndex(const executor::ProcessSpec& spec,
                                                 const std::string& path, int64_t index) {
  executor::ProcessSpec out = spec;
  for (size_t i = 0; i < out.args.size(); ++i) {
    Result<std::string> arg = ExpandIndex(out.args[i], index);
    if (!arg.ok()) return FieldError(IndexPath(FieldPath(path, "args"), i), arg.status().message());
    out.args[i] = std::move(*arg);
  }
  for (size_t i = 0; i < out.env.size(); ++i) {
    std::string& entry = out.env[i];
    const size_t eq = entry.find('=');  // DecodeProcessSpec checked NAME=value
    Result<std::string> value = ExpandIndex(std::string_view(entry).substr(eq + 1), index);
    if (!value.ok())
      return FieldError(IndexPath(FieldPath(path, "env"), i), value.status().message());
    entry = entry.substr(0, eq + 1) + *value;
  }
  return out;
}

bool HasIndexTemplate(const executor::ProcessSpec& spec) {
  auto templated = [](const std::string& s) { return s.find("{{") != std::string::npos; };
  return std::any_of(spec.args.begin(), spec.args.end(), templated) ||
         std::any_of(spec.env.begin(), spec.env.end(), templated);
}

Status ReadRunId(const Json& value, const std::string& path, std::string* out) {
  BERTH_RETURN_IF_ERROR(ReadText(value, path, out));
  const std::string_view task = TaskIdOfRun(*out);
  const std::string_view attempt = std::string_view(*out).substr(task.size());
  if (Status id = CheckTaskId(task); !id.ok()) return FieldError(path, id.message());
  if (!attempt.empty() &&
      (attempt.size() < 2 || attempt.find_first_not_of("0123456789", 1) != std::string_view::npos))
    return FieldError(path, "expected a task id, with '~' and an attempt number after it");
  return Status::Ok();
}

}  // namespace berth::api
