// `berth task logs` and `berth service logs` (docs/cli.md): a task's output
// as its berth-node keeps it, read through berthd (GET
// /v1/tasks/{id}/logs). A service's logs are every one of its tasks' lines,
// each prefixed by the task's name and id as `docker service logs` does,
// merged in time order. --follow reads new lines until the task ends (for
// a service, until every task it started reading has ended; tasks that
// start later are not picked up), asking berthd once a second.
#pragma once

#include <iosfwd>
#include <string>

#include "api/api_client.h"

namespace CLI {
class App;
}

namespace berth::cli {

struct LogsOptions {
  bool follow = false;
  int64_t tail = 0;  // the last N lines only; 0: all
  bool timestamps = false;
};
// Adds -f/--follow, -n/--tail and -t/--timestamps to a logs verb.
void AddLogsFlags(CLI::App& verb, LogsOptions& options);

// Exit status 0, or 1 with "berth: <why>" on `err`.
int PrintTaskLogs(api::ApiClient& client, const std::string& task, const LogsOptions& options,
                  std::ostream& out, std::ostream& err);
int PrintServiceLogs(api::ApiClient& client, const std::string& service, const LogsOptions& options,
                     std::ostream& out, std::ostream& err);
// `berth job logs JOB`: the output of the job's tasks that are placed (the
// current run of each: a retried task's earlier runs are not shown), each
// line prefixed by the task's id and node.
int PrintJobLogs(api::ApiClient& client, const std::string& job, const LogsOptions& options,
                 std::ostream& out, std::ostream& err);

}  // namespace berth::cli
