// `berth job`: submit, ls, inspect and kill, each one request, and logs
// (cli/logs.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "api/document.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/job/command_lines.h"
#include "cli/logs.h"
#include "cli/output.h"
#include "cli/task_table.h"

namespace berth::cli {
namespace {

// berthd's bound on a job's tasks (daemon/registry/job_registry.h).
constexpr int64_t kMaxTasks = 100'000;

// "complete=2 running=1": how many of a job's tasks are in each state.
std::string Progress(const Json& job) {
  if (!job.contains("states") || job["states"].empty()) return "-";
  std::string text;
  for (const auto& [state, count] : job["states"].items())
    text += (text.empty() ? "" : " ") + state + "=" + Text(count);
  return text;
}

void PrintJobs(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& jobs = answer.contains("jobs") ? answer["jobs"] : Json::array({answer});
  for (const Json& j : jobs)
    rows.push_back({Text(j["id"]), Text(j.value("requestor", Json())),
                    Text(j.value("tasks", Json())),
                    j.value("state", j.value("killed", false) ? "killed" : "active"), Progress(j)});
  PrintTable(out, {"ID", "REQUESTOR", "TASKS", "STATE", "TASK STATES"}, rows);
}

using CommandLines = std::vector<std::vector<std::string>>;

struct JobSubmitOptions {
  std::string id, requestor, duration = "1", outcome = "complete";
  int64_t tasks = 1, max_retries = -1;      // -1: berthd's default
  const CLI::Option* tasks_flag = nullptr;  // whether --tasks was given
  std::string commands_file;                // one command line per task ("-": stdin)
  // COMMAND words before `--` (any after it come from the context).
  std::vector<std::string> command;
  ReserveFlags reserve;
  ConstraintFlags constraints;
  ProcessFlags process;
};

// One entry of "tasks": only what differs from berthd's defaults (1 s,
// complete), so that a large job's body stays small.
Result<Json> TaskEntry(const JobSubmitOptions& o) {
  Json entry = Json::object();
  char* rest = nullptr;
  const double seconds = std::strtod(o.duration.c_str(), &rest);
  if (o.duration.empty() || *rest != '\0' || !(seconds >= 0))
    return Status::InvalidArgument("--duration '" + o.duration + "': expected seconds");
  if (seconds != 1) entry["duration"] = seconds;
  if (o.outcome != "complete") entry["outcome"] = o.outcome;
  return entry;
}

// The lines of --commands-file (none without it), checked against the
// other ways to say what the tasks run and how many there are.
Result<CommandLines> ReadCommandLines(const JobSubmitOptions& o, bool has_command,
                                      std::istream& in) {
  if (o.commands_file.empty()) return CommandLines{};
  if (has_command)
    return Status::InvalidArgument(
        "--commands-file: not with a command after -- (each line of the file is a task's "
        "command)");
  Result<std::string> text = api::ReadDocumentFile(o.commands_file, in);
  if (!text.ok()) return Status::InvalidArgument("--commands-file: " + text.status().message());
  const std::string source = o.commands_file == "-" ? "<stdin>" : o.commands_file;
  Result<CommandLines> lines = ParseCommandLines(*text);
  if (!lines.ok()) return Status::InvalidArgument(source + ": " + lines.status().message());
  const int64_t count = static_cast<int64_t>(lines->size());
  if (count > kMaxTasks)
    return Status::InvalidArgument(source + ": " + std::to_string(count) +
                                   " command lines, but a job has 1 to " +
                                   std::to_string(kMaxTasks) + " tasks");
  if (o.tasks_flag->count() > 0 && o.tasks != count)
    return Status::InvalidArgument("--tasks " + std::to_string(o.tasks) + ": " + source + " has " +
                                   std::to_string(count) + " command lines (one per task)");
  return lines;
}

// The POST body, or InvalidArgument (bad usage, exit 2). With `lines`, task
// i runs line i, and the template holds what the tasks share.
Result<Json> JobSubmitBody(const JobSubmitOptions& o, const std::vector<std::string>& after_dashes,
                           const CommandLines& lines) {
  const int64_t tasks = lines.empty() ? o.tasks : static_cast<int64_t>(lines.size());
  if (tasks < 1 || tasks > kMaxTasks)
    return Status::InvalidArgument("--tasks " + std::to_string(tasks) + ": a job has 1 to " +
                                   std::to_string(kMaxTasks) + " tasks");
  std::vector<std::string> command = o.command;
  command.insert(command.end(), after_dashes.begin(), after_dashes.end());
  Json task = Json::object();
  o.reserve.Apply(&task);
  o.constraints.Set(&task);
  BERTH_RETURN_IF_ERROR(o.process.Apply(command, &task));
  Result<Json> entry = TaskEntry(o);
  if (!entry.ok()) return entry.status();
  Json body = {{"id", o.id}, {"requestor", o.requestor}, {"task", task}, {"tasks", Json::array()}};
  for (int64_t i = 0; i < tasks; ++i) body["tasks"].push_back(*entry);
  if (!lines.empty()) body["commands"] = lines;
  if (o.max_retries >= 0) body["max_retries"] = o.max_retries;
  return body;
}

int RunJobSubmit(const JobSubmitOptions& o, const VerbContext& context) {
  const bool has_command = !o.command.empty() || !context.command.empty();
  Result<CommandLines> lines = ReadCommandLines(o, has_command, context.in);
  Result<Json> body =
      lines.ok() ? JobSubmitBody(o, context.command, *lines) : Result<Json>(lines.status());
  if (!body.ok()) {
    context.err << "berth: " << body.status().message() << "\n";
    return 2;
  }
  std::optional<Json> answer = CallOrSay(context.client, "POST", "/v1/jobs", *body, context.err);
  if (!answer) return 1;
  if (context.json)
    context.out << answer->dump(2) << "\n";
  else
    PrintJobs(*answer, context.out);
  return 0;
}

void AddJobSubmit(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<JobSubmitOptions>();
  CLI::App* verb = verbs.Add(
      noun, "submit", "Submit a job of N tasks",
      [o](const VerbContext& context) { return RunJobSubmit(*o, context); }, TakesCommand::kYes);
  verb->footer(
      "Everything after -- is each task's command and its arguments, run by berth-node "
      "machines; {{.Index}} in an argument or env value is the task's index (1 to N): "
      "berth job submit j --requestor me --tasks 3 -- sh -c 'echo part {{.Index}}'. "
      "Or --commands-file FILE (- for standard input): one command line per task, split into "
      "words as a shell would ('single', \"double\" quotes, backslash) but run without a "
      "shell; blank lines and # comments are skipped, and the tasks are as many as the lines.");
  AddIdArgument(*verb, "ID", "job id", o->id);
  verb->add_option("--requestor", o->requestor, "who asks (decides the fair-share class)")
      ->required();
  o->tasks_flag = verb->add_option("--tasks", o->tasks,
                                   "number of tasks, 1 to 100000 (default 1, or one per line "
                                   "of --commands-file)");
  verb->add_option("--commands-file", o->commands_file,
                   "one command line per task (- for standard input), instead of a "
                   "command after --")
      ->type_name("FILE");
  verb->add_option("--max-retries", o->max_retries,
                   "times a failed task waits again before it stays failed (default 2)");
  verb->add_option("--duration", o->duration,
                   "seconds each task runs in the simulated executor (default 1)");
  verb->add_option("--outcome", o->outcome, "simulated executor: complete | fail")
      ->check(CLI::IsMember({"complete", "fail"}));
  o->reserve.Add(*verb);
  verb->add_option("--constraint", o->constraints.add, "placement constraint (repeatable)");
  o->process.AddCreate(*verb);
  verb->add_option("COMMAND", o->command,
                   "the program and its arguments, after --, run by a berth-node machine "
                   "(default: none, the simulated executor runs the tasks)");
}

struct JobLogsOptions {
  std::string target;  // JOB or JOB.N
  LogsOptions logs;
};

void AddJobLogs(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<JobLogsOptions>();
  CLI::App* verb = verbs.Add(
      noun, "logs", "Show the output of a job's tasks (or of one, JOB.N), merged in time",
      [o](const VerbContext& context) {
        // A job id never holds '.', a task id always does.
        if (o->target.find('.') != std::string::npos)
          return PrintTaskLogs(context.client, o->target, o->logs, context.out, context.err);
        return PrintJobLogs(context.client, o->target, o->logs, context.out, context.err);
      });
  verb->add_option("JOB", o->target, "job id, or JOB.N for its task N")->required();
  AddLogsFlags(*verb, o->logs);
}

// `job inspect`: the job field by field, then each of its tasks with its
// node, attempt, retries and full message (why it failed, or waits).
void PrintJobDetail(const Json& job, const Json& tasks, std::ostream& out) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"ID:", Text(job.value("id", Json()))},
      {"Requestor:", Text(job.value("requestor", Json()))},
      {"State:", job.value("state", "active")},
      {"Tasks:", Text(job.value("tasks", Json())) + " (" + Progress(job) + ")"},
      {"Max retries:", Text(job.value("max_retries", Json(2)))},
      {"Command:", CommandText(job.value("task", Json::object()))}};
  for (const auto& [label, value] : rows)
    out << label << std::string(14 - label.size(), ' ') << value << "\n";
  std::vector<std::vector<std::string>> table;
  for (const Json& t : InDisplayOrder(tasks))
    table.push_back({Text(t.value("id", Json())), Text(t.value("node", Json())),
                     t.value("state", "pending"), std::to_string(t.value("attempt", 0) + 1),
                     std::to_string(t.value("retries", 0)), t.value("message", "")});
  out << "\n";
  PrintTable(out, {"TASK", "NODE", "STATE", "ATTEMPT", "RETRIES", "MESSAGE"}, table);
}

int RunJobInspect(const std::string& id, const VerbContext& context) {
  std::optional<Json> job =
      CallOrSay(context.client, "GET", "/v1/jobs/" + id, nullptr, context.err);
  if (!job) return 1;
  if (context.json) {
    context.out << job->dump(2) << "\n";
    return 0;
  }
  std::optional<Json> tasks =
      CallOrSay(context.client, "GET", "/v1/tasks?job=" + id, nullptr, context.err);
  if (!tasks) return 1;
  PrintJobDetail(*job, *tasks, context.out);
  return 0;
}

void AddJobInspect(CLI::App& noun, Verbs& verbs) {
  auto id = std::make_shared<std::string>();
  CLI::App* verb = verbs.Add(
      noun, "inspect", "Show a job and each of its tasks: node, state, attempt, retries, message",
      [id](const VerbContext& context) { return RunJobInspect(*id, context); });
  AddIdArgument(*verb, "ID", "job id", *id);
}

// A simple verb of one job: METHOD /v1/jobs/ID.
SimpleVerb OnJob(const char* name, const char* help, const char* method) {
  return {name, help, [=](CLI::App& verb) {
            auto id = std::make_shared<std::string>();
            AddIdArgument(verb, "ID", "job id", *id);
            return OneRequest{[=] {
                                return Result<Request>(Request{method, "/v1/jobs/" + *id, nullptr});
                              },
                              PrintJobs};
          }};
}

}  // namespace

void AddJobCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun = *app.add_subcommand("job", "Submit and manage batch jobs of a running berthd")
                        ->require_subcommand(1);
  AddJobSubmit(noun, verbs);
  AddJobLogs(noun, verbs);
  AddJobInspect(noun, verbs);
  verbs.AddTable(noun,
                 {{"ls", "List jobs in arrival order",
                   [](CLI::App&) {
                     return OneRequest{[] { return Result<Request>(Get("/v1/jobs")); }, PrintJobs};
                   }},
                  OnJob("kill", "Kill a job: its tasks stop", "DELETE")});
}

}  // namespace berth::cli
