// `berth task logs TASK [-f] [-n N] [-t]`: the task's output as its
// berth-node keeps it (cli/logs.h): GET the task, then its logs.
#include "cli/logs.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/task/task.h"

namespace berth::cli {
namespace {

struct TaskLogsOptions {
  std::string task;
  LogsOptions logs;
};

}  // namespace

void AddTaskLogs(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<TaskLogsOptions>();
  CLI::App* verb =
      verbs.Add(noun, "logs", "Show a task's output (a task run by a berth-node)",
                [o](const VerbContext& context) {
                  return PrintTaskLogs(context.client, o->task, o->logs, context.out, context.err);
                });
  AddTaskArgument(*verb, o->task);
  AddLogsFlags(*verb, o->logs);
}

}  // namespace berth::cli
