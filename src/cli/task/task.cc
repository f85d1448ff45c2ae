// `berth task`: its simple verbs (ls, inspect, why) and logs (logs.cc).
#include "cli/task/task.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/task_table.h"

namespace berth::cli {
namespace {

// "web.4 (web.4.348) is pending: no suitable node (...)".
void PrintWhy(const Json& answer, std::ostream& out) {
  if (answer.contains("name"))
    out << Text(answer["name"]) << " (" << Text(answer["task"]) << ")";
  else
    out << Text(answer["task"]);
  out << " is " << Text(answer["state"]);
  if (answer.contains("node")) out << " on " << Text(answer["node"]);
  out << ": " << Text(answer["reason"]) << "\n";
}

void PrintTasks(const Json& answer, std::ostream& out) { PrintTaskTable(answer, {}, out); }

// `?k=v&...` of the non-empty values.
std::string Query(std::initializer_list<std::pair<const char*, std::string>> params) {
  std::string query;
  for (const auto& [key, value] : params)
    if (!value.empty()) query += (query.empty() ? "?" : "&") + std::string(key) + "=" + value;
  return query;
}

struct TaskLsOptions {
  std::string service, job, node, state, desired_state;
};

OneRequest DefineTaskLs(CLI::App& verb) {
  auto o = std::make_shared<TaskLsOptions>();
  verb.add_option("--service", o->service, "only the tasks of this service")->check(IdRule());
  verb.add_option("--job", o->job, "only the tasks of this job")->check(IdRule());
  verb.add_option("--node", o->node, "only the tasks on this node")->check(IdRule());
  verb.add_option("--state", o->state, "only the tasks in this state (running, pending, ...)");
  verb.add_option("--desired-state", o->desired_state,
                  "only the tasks with this desired state (running, shutdown, complete)");
  return {[o] {
            return Result<Request>(Get("/v1/tasks" + Query({{"service", o->service},
                                                            {"job", o->job},
                                                            {"node", o->node},
                                                            {"state", o->state},
                                                            {"desired_state", o->desired_state}})));
          },
          PrintTasks};
}

// A simple verb of one task: GET /v1/tasks/TASK plus `suffix`.
SimpleVerb OnTask(const char* name, const char* help, const char* suffix,
                  void (*print)(const Json&, std::ostream&)) {
  return {name, help, [=](CLI::App& verb) {
            auto task = std::make_shared<std::string>();
            AddTaskArgument(verb, *task);
            return OneRequest{[=] { return Result<Request>(Get("/v1/tasks/" + *task + suffix)); },
                              print};
          }};
}

}  // namespace

void AddTaskArgument(CLI::App& verb, std::string& task) {
  verb.add_option("TASK", task, "task id or name (web.1: the newest task of slot 1)")
      ->check(TaskIdRule())
      ->required();
}

void AddTaskCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun =
      *app.add_subcommand("task", "Inspect tasks of a running berthd")->require_subcommand(1);
  verbs.AddTable(noun, {{"ls", "List tasks", DefineTaskLs},
                        OnTask("inspect", "Show one task", "", PrintTasks)});
  AddTaskLogs(noun, verbs);
  verbs.AddTable(noun, {OnTask("why", "Explain why a task is where it is, or why it is not running",
                               "/why", PrintWhy)});
}

}  // namespace berth::cli
