// The routes of berth-node machines (daemon/nodes/node_routes.h, shared
// with berth-agent) and of what berthd serves from them: task logs.
#include "api/api_client.h"
#include "core/task.h"
#include "daemon/daemon.h"
#include "daemon/nodes/node_routes.h"
#include "daemon/registry/task_views.h"
#include "daemon/routes/routes.h"

namespace berth::daemon {

// A leader's answers to nodes carry its epoch (0 without etcd): berth-node
// refuses answers of an epoch older than one it has seen (docs/ha.md).
// With TLS, the answers name the port of the node sessions, which a node
// opens instead of polling (docs/agent.md, "Sessions").
void Daemon::AddBerthNodeRoutes(const DaemonOptions& options) {
  NodeRouteHooks hooks;
  hooks.serving = [this] { return leading() ? Status::Ok() : NotLeading(); };
  hooks.stamp = [this](Json& answer) {
    if (leadership_ != nullptr) answer["epoch"] = leadership_->view().epoch;
    if (sessions_ != nullptr) answer["session_port"] = sessions_->port();
  };
  if (tls_) {
    NodeSessionsOptions sessions;
    sessions.host = options.host;
    sessions.port = options.session_port >= 0 ? options.session_port
                    : options.port == 0       ? 0
                                              : kDefaultSessionPort;
    sessions.cert_file = ca_->cert_file();
    sessions.key_file = ca_->key_file();
    sessions.ca_file = ca_->bundle_file();
    sessions.max_per_address = options.max_sessions_per_address;
    sessions_ = std::make_unique<NodeSessions>(*dispatcher_, *node_executor_, hooks, sessions);
    node_executor_->OnPublished([this](const std::vector<std::string>& nodes, bool all) {
      sessions_->Published(nodes, all);
    });
    dispatcher_->OnRemoved([this](const std::string& node) { sessions_->Close(node); });
  }
  AddDispatcherRoutes(*server_, *dispatcher_, *node_executor_, std::move(hooks));
  server_->Route("GET", R"(/v1/tasks/([^/]+)/logs)",
                 [this](const ApiRequest& r) { return Answer(TaskLogs(r)); });
}

// Asks the task's node for its log lines (the node's GET
// /v1/tasks/{id}/logs, with the node's credential).
Result<Json> Daemon::TaskLogs(const ApiRequest& r) {
  if (!leading()) return NotLeading();
  Result<int64_t> tail = api::QueryCount(r, "tail", 0);
  if (!tail.ok()) return tail.status();
  Result<int64_t> after = api::QueryCount(r, "after", 0);
  if (!after.ok()) return after.status();
  Result<Json> task = GetTask(*store_, r.params[0]);
  if (!task.ok()) return task.status();
  const std::string id = task->value("id", ""), node = task->value("node", "");
  if (node.empty()) return Status::NotFound("task '" + id + "' has not been placed: no logs yet");
  const std::string run = RunIdOf(id, task->value("attempt", int64_t{0}));
  if (const std::string agent = task->value("agent", ""); !agent.empty())
    return AgentTaskLogs(agent, id, node, run, *tail, *after);
  Result<Json> stored = nodes_.Get(node);
  if (!stored.ok())
    return Status::NotFound("task '" + id + "' ran on node '" + node +
                            "', which was removed: its logs went with it");
  const std::string endpoint = stored->value("berth_node", Json::object()).value("endpoint", "");
  std::optional<std::string> credential = dispatcher_->CredentialHashOf(node);
  if (endpoint.empty() || !credential)
    return Status::NotFound("task '" + id + "' runs on node '" + node +
                            "', which is simulated: it has no logs");
  // Over TLS berthd shows its own certificate (role manager), which the
  // node's log server asks for; without TLS, the node's credential.
  api::ApiClient client(endpoint, tls_ ? "" : *credential, 10,
                        tls_ ? ca_->client_credentials() : tls::Credentials{});
  // A job's task that ran again has its current run's output under the
  // run's id (RunIdOf).
  Result<Json> lines =
      client.Call("GET", "/v1/tasks/" + run + "/logs?tail=" + std::to_string(*tail) +
                             "&after=" + std::to_string(*after));
  if (!lines.ok() && lines.status().code() != StatusCode::kNotFound)
    return Status::Unavailable("cannot read the logs of task '" + id + "' from node '" + node +
                               "': " + lines.status().message());
  if (!lines.ok()) return lines.status();
  (*lines)["task"] = id;
  (*lines)["node"] = node;
  return lines;
}

}  // namespace berth::daemon

namespace berth::daemon {

// A task placed through an agent: the agent reads its node's logs.
Json Daemon::AgentNodes() {
  Json out = {{"nodes", Json::array()}, {"unreachable", Json::array()}};
  for (const auto& a : connected_agents_) {
    Result<Json> listed = a->Nodes();
    if (!listed.ok()) {
      out["unreachable"].push_back(
          {{"agent", a->agent_id()}, {"error", listed.status().message()}});
      continue;
    }
    for (Json& node : (*listed)["nodes"]) out["nodes"].push_back(std::move(node));
  }
  return out;
}

std::vector<std::string> Daemon::agent_names() const {
  std::vector<std::string> names;
  for (const auto& a : connected_agents_) names.push_back(a->agent_id() + " (" + a->server() + ")");
  return names;
}

Result<Json> Daemon::AgentTaskLogs(const std::string& agent, const std::string& id,
                                   const std::string& node, const std::string& run, int64_t tail,
                                   int64_t after) {
  for (const auto& a : connected_agents_) {
    if (a->agent_id() != agent) continue;
    Result<Json> lines = a->TaskLogs(run, tail, after);
    if (!lines.ok() && lines.status().code() != StatusCode::kNotFound)
      return Status::Unavailable("cannot read the logs of task '" + id + "' from agent " + agent +
                                 ": " + lines.status().message());
    if (!lines.ok())
      return Status::NotFound("task '" + id + "' runs on node '" + node + "' of agent " + agent +
                              ", which has no logs of it (its nodes are simulated, or it restarted "
                              "since the task ended)");
    (*lines)["task"] = id;
    (*lines)["node"] = node;
    return lines;
  }
  return Status::NotFound("task '" + id + "' was placed through agent " + agent +
                          ", which this berthd does not know");
}

}  // namespace berth::daemon
