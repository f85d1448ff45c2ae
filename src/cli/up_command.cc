#include "cli/up_command.h"

#include <signal.h>

#include <ostream>

#include "api/api_client.h"
#include "cli/client_commands.h"
#include "cli/task_table.h"

namespace berth::cli {
namespace {

using api::Json;

// Creates an object unless it exists (a Conflict means it does).
Status CreateIfAbsent(api::ApiClient& client, const std::string& path, const Json& body) {
  Result<Json> created = client.Call("POST", path, body);
  if (created.ok() || created.status().code() == StatusCode::kConflict) return Status::Ok();
  return created.status();
}

Status SetUp(api::ApiClient& client, const UpOptions& options) {
  for (int i = 1; i <= options.nodes; ++i) {
    const Json node = {{"id", "sim-" + std::to_string(i)},
                       {"resources", {{"cpu", 4}, {"memory", "8Gi"}}},
                       {"labels", {{"az", "az" + std::to_string((i - 1) % 3 + 1)}}}};
    BERTH_RETURN_IF_ERROR(CreateIfAbsent(client, "/v1/nodes", node));
  }
  if (!options.demo) return Status::Ok();
  const Json demo = {{"id", "demo"},
                     {"replicas", 2 * options.nodes},
                     {"task",
                      {{"resources", {{"cpu", 1}, {"memory", "1Gi"}}},
                       {"preferences", {{{"spread", "node.labels.az"}}}}}}};
  return CreateIfAbsent(client, "/v1/services", demo);
}

}  // namespace

int RunUp(const UpOptions& options, std::ostream& out, std::ostream& err) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  if (!options.once) pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

  Result<std::unique_ptr<daemon::Daemon>> daemon = daemon::Daemon::Open(options.daemon);
  if (!daemon.ok()) {
    err << "berth up: " << daemon.status().message() << "\n";
    return 1;
  }
  const std::string server = options.daemon.host + ":" + std::to_string((*daemon)->port());
  api::ApiClient client(server, (*daemon)->token());
  if (Status set_up = SetUp(client, options); !set_up.ok()) {
    err << "berth up: " << set_up.message() << "\n";
    return 1;
  }
  if (!(*daemon)->WaitSettled(std::chrono::seconds(30)))
    err << "berth up: placement still running after 30 s\n";
  Result<Json> tasks = client.Call("GET", "/v1/tasks");
  if (tasks.ok()) {
    std::vector<std::vector<std::string>> rows;
    for (const Json& t : InDisplayOrder(*tasks))
      rows.push_back({t.value("name", t["id"].get<std::string>()), t.value("state", ""),
                      t.value("node", "-"), t.value("message", "")});
    PrintTable(out, {"TASK", "STATE", "NODE", "MESSAGE"}, rows);
  }
  if (options.once) {
    out << "berthd ran at http://" << server << " with " << options.nodes
        << " simulated nodes and has stopped (--once); data and API token in "
        << options.daemon.data_dir << "\n";
    return 0;
  }
  out << "berthd is running at http://" << server << " with " << options.nodes
      << " simulated nodes; data and API token in " << options.daemon.data_dir << "\n";
  out << "Try: berth task ls --server " << server << " --data-dir " << options.daemon.data_dir
      << "   (Ctrl-C stops)\n"
      << std::flush;
  int signal = 0;
  sigwait(&signals, &signal);
  out << "berth up: stopping\n";
  return 0;
}

}  // namespace berth::cli
