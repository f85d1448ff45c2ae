#include "cli/up_command.h"

#include <signal.h>
#include <unistd.h>

#include <ostream>
#include <thread>

#include "api/api_client.h"
#include "cli/logs.h"
#include "cli/output.h"
#include "cli/task_table.h"
#include "node/node_agent.h"

namespace berth::cli {
namespace {

using api::Json;

constexpr const char* kLocalNode = "local";

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
                       {"constraints", {"node.id!=" + std::string(kLocalNode)}},
                       {"preferences", {{{"spread", "node.labels.az"}}}}}}};
  BERTH_RETURN_IF_ERROR(CreateIfAbsent(client, "/v1/services", demo));
  if (!options.local_node) return Status::Ok();
  const Json hello = {
      {"id", "hello"},
      {"replicas", 1},
      {"restart_policy", {{"condition", "none"}}},
      {"task",
       {{"command", "sh"},
        {"args",
         {"-c", "echo \"hello from task $BERTH_TASK_ID on node $BERTH_NODE_ID\"; uname -sm"}},
        {"constraints", {"node.id==" + std::string(kLocalNode)}}}}};
  return CreateIfAbsent(client, "/v1/services", hello);
}

Result<std::unique_ptr<node::NodeAgent>> StartLocalNode(api::ApiClient& client,
                                                        const std::string& server,
                                                        const UpOptions& options,
                                                        const Clock& clock) {
  Result<Json> token = client.Call("GET", "/v1/tokens/node");
  if (!token.ok()) return token.status();
  node::NodeAgentOptions local;
  local.join = server;  // https://, the token's CA digest checked first
  local.join_token = token->value("token", "");
  local.data_dir = options.daemon.data_dir + "/local-node";
  local.hostname = kLocalNode;
  local.listen_host = "127.0.0.1";
  local.listen_port = 0;
  local.advertise = "127.0.0.1";
  local.exec_path = options.exec_path.empty() ? node::ExecNextToThisProgram() : options.exec_path;
  return node::NodeAgent::Start(local, clock);
}

// Waits (up to 30 s) for the hello task to end, then prints its output.
void ShowHello(api::ApiClient& client, std::ostream& out, std::ostream& err) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    Result<Json> task = client.Call("GET", "/v1/tasks/hello.1");
    const std::string state = task.ok() ? task->value("state", "") : "";
    if (state == "complete" || state == "failed" || state == "rejected") break;
    if (std::chrono::steady_clock::now() > deadline) {
      err << "berth up: the hello task did not end within 30 s (" << state << ")\n";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a client's view
  }
  out << "\nOutput of hello.1, a real process on node '" << kLocalNode
      << "' (berth service logs hello):\n";
  PrintServiceLogs(client, "hello", {}, out, err);
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
  const std::string server = (*daemon)->url();
  api::ApiClient client(server, (*daemon)->token(), 30, (*daemon)->client_tls());
  SystemClock clock;
  std::unique_ptr<node::NodeAgent> local;
  if (options.local_node) {
    Result<std::unique_ptr<node::NodeAgent>> started =
        StartLocalNode(client, server, options, clock);
    if (!started.ok()) {
      err << "berth up: the local node: " << started.status().message() << "\n";
      return 1;
    }
    local = std::move(*started);
  }
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
  if (options.demo && local) ShowHello(client, out, err);
  const std::string nodes = std::to_string(options.nodes) + " simulated nodes" +
                            (local ? " and the real node '" + std::string(kLocalNode) + "'" : "");
  if (options.once) {
    out << "berthd ran at " << server << " with " << nodes
        << " and has stopped (--once); data and API token in " << options.daemon.data_dir << "\n";
    return 0;
  }
  out << "berthd is running at " << server << " with " << nodes << "; data, API token and CA in "
      << options.daemon.data_dir << "\n";
  out << "Dashboard: " << server << "/ui/ (it asks for the token in " << options.daemon.data_dir
      << "/token)\n";
  out << "Try: berth task ls --server " << server << " --data-dir " << options.daemon.data_dir
      << "   (Ctrl-C stops)\n"
      << std::flush;
  int signal = 0;
  sigwait(&signals, &signal);
  out << "berth up: stopping\n";
  return 0;
}

}  // namespace berth::cli
