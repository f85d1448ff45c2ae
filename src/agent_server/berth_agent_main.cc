// berth-agent: a cluster agent in its own process. See docs/agent.md.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iostream>

#include "agent/agent.h"
#include "agent_server/agent_rpc_server.h"
#include "agent_server/agent_service.h"
#include "api/cluster_codec.h"
#include "api/document.h"
#include "api/http_server.h"
#include "auth/token.h"
#include "core/names.h"
#include "core/program.h"
#include "daemon/ca/cluster_ca.h"
#include "sim/vela_nodes.h"
#include "store/sqlite_store.h"
#include "tls/certificate.h"

namespace {

using berth::Result;
using berth::Status;

// The "nodes" of a JSON or YAML document ({"nodes": [...]}, as in docs/plan.md).
Result<std::vector<berth::Node>> ReadNodes(const std::string& path) {
  Result<std::string> text = berth::api::ReadDocumentFile(path, std::cin);
  if (!text.ok()) return text.status();
  Result<nlohmann::json> doc = berth::api::ParseDocumentText(*text);
  if (!doc.ok()) return doc.status();
  return berth::api::DecodeNodeList(*doc);
}

int Run(int argc, char** argv) {
  berth::agent::AgentOptions agent_options;
  berth::api::ApiServerOptions server;
  server.port = 7481;
  std::string data_dir = "berth-agent-data", nodes_file, sampling = "random";
  int simulate = 0;
  agent_options.max_nodes = 10'000;
  CLI::App app{
      "berth-agent: a cluster agent serving sampling and commit requests over HTTP. Without "
      "--nodes or --simulate, its cluster is the berth-node machines that join it"};
  app.add_option("--id", agent_options.id, "the agent's id (prefix of simulated node ids)")
      ->capture_default_str();
  app.add_option("--data-dir", data_dir, "directory of the API token (token); created if absent")
      ->capture_default_str();
  app.add_option("--host", server.host, "address to listen on")->capture_default_str();
  app.add_option("--port", server.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  berth::agent_server::AgentRpcOptions rpc;
  rpc.port = -1;
  app.add_option("--rpc-port", rpc.port,
                 "TCP port of the agent's gRPC service (TLS; none with --insecure-http; 0: any "
                 "free port; default --port + 10, so 7491, or any free port when --port is 0)")
      ->check(CLI::Range(0, 65535));
  bool no_rpc = false;
  app.add_flag("--no-rpc", no_rpc,
               "Serve no gRPC service: berthd then makes every call over HTTPS");
  app.add_option("--nodes", nodes_file,
                 "a JSON or YAML file with the cluster's nodes ({\"nodes\": [...]})");
  app.add_option("--simulate", simulate, "simulate N nodes of Vela's four types instead")
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--max-nodes", agent_options.max_nodes,
                 "the most berth-node machines that may join (without --nodes or --simulate)")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--sampling", sampling, "random | round-robin")
      ->check(CLI::IsMember({"random", "round-robin"}))
      ->capture_default_str();
  app.add_option("--threads", server.threads, "HTTP worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  berth::daemon::NodeLifecycleOptions lifecycle;
  std::string heartbeat_period = "5s";
  app.add_option("--heartbeat-period", heartbeat_period,
                 "How often its berth-node machines heartbeat (as berthd's)")
      ->capture_default_str();
  app.add_option("--heartbeat-multiplier", lifecycle.grace_multiplier,
                 "A berth-node is marked down after this many heartbeat periods without one")
      ->check(CLI::Range(int64_t{2}, int64_t{100}))
      ->capture_default_str();
  app.add_option("--manager-ca", rpc.manager_ca_file,
                 "berthd's CA bundle (its DATA_DIR/ca.pem): callers of the agent token must also "
                 "present berthd's certificate of it (mutual TLS, docs/security.md)")
      ->check(CLI::ExistingFile);
  bool insecure_http = false;
  app.add_flag("--insecure-http", insecure_http,
               "Serve plain HTTP instead of HTTPS; only on a loopback --host (docs/security.md)");
  app.set_version_flag("--version", "berth-agent 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  Result<berth::Duration> period = berth::ParseDuration(heartbeat_period);
  if (period.ok() && *period < berth::Duration{10})
    period = Status::InvalidArgument("must be at least 10ms");
  if (!period.ok()) {
    std::fprintf(stderr, "berth-agent: --heartbeat-period: %s\n",
                 period.status().message().c_str());
    return 2;
  }
  lifecycle.heartbeat_period = *period;
  if (Status valid = berth::CheckId(agent_options.id); !valid.ok()) {
    std::fprintf(stderr, "berth-agent: --id: %s\n", valid.message().c_str());
    return 2;
  }
  if (insecure_http && !berth::api::IsLoopbackHost(server.host)) {
    std::fprintf(stderr,
                 "berth-agent: --insecure-http serves plain HTTP, which only a loopback --host "
                 "may\n");
    return 2;
  }
  if (insecure_http && !rpc.manager_ca_file.empty()) {
    std::fprintf(stderr, "berth-agent: --manager-ca needs TLS: drop --insecure-http\n");
    return 2;
  }
  std::string manager_ca;
  if (!rpc.manager_ca_file.empty()) {
    Result<std::string> read = berth::tls::ReadPemFile(rpc.manager_ca_file);
    Status valid = read.ok() ? berth::tls::SplitBundle(*read).status() : read.status();
    if (!valid.ok()) {
      std::fprintf(stderr, "berth-agent: --manager-ca %s: %s\n", rpc.manager_ca_file.c_str(),
                   valid.message().c_str());
      return 2;
    }
    manager_ca = *read;
    if (!manager_ca.ends_with('\n')) manager_ca += '\n';
  }
  if (!nodes_file.empty() && simulate > 0) {
    std::fprintf(stderr, "berth-agent: give at most one of --nodes FILE and --simulate N\n");
    return 2;
  }
  const bool fleet = nodes_file.empty() && simulate == 0;
  Result<std::vector<berth::Node>> nodes =
      simulate > 0
          ? Result<std::vector<berth::Node>>(berth::sim::MakeVelaNodes(agent_options.id, simulate))
      : fleet ? Result<std::vector<berth::Node>>(std::vector<berth::Node>{})
              : ReadNodes(nodes_file);
  if (!nodes.ok()) {
    std::fprintf(stderr, "berth-agent: %s\n", nodes.status().message().c_str());
    return 2;
  }
  if (::mkdir(data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "berth-agent: cannot create %s\n", data_dir.c_str());
    return 1;
  }
  Result<std::string> token = berth::auth::LoadOrCreateToken(data_dir);
  if (!token.ok()) {
    std::fprintf(stderr, "berth-agent: %s\n", token.status().message().c_str());
    return 1;
  }
  server.token = *token;
  // Its own CA (docs/security.md, "Agents"): it signs the certificates of
  // the berth-node machines that join it, and issues the agent's, which
  // berthd checks against DATA_DIR/ca.pem (berthd --agent-ca).
  berth::SystemClock system_clock;  // before ca, whose renewals wait on it
  std::unique_ptr<berth::store::SqliteStore> ca_store;
  std::unique_ptr<berth::daemon::ClusterCa> ca;
  if (!insecure_http) {
    Result<std::unique_ptr<berth::store::SqliteStore>> opened =
        berth::store::SqliteStore::Open(data_dir + "/ca.db");
    berth::daemon::ClusterCaOptions ca_options;
    ca_options.data_dir = data_dir;
    ca_options.id = agent_options.id;
    ca_options.role = berth::tls::kRoleAgent;
    ca_options.server_files = !no_rpc;  // the gRPC service's certificate and key
    ca_options.client_trust_pem = manager_ca;
    if (server.host != "0.0.0.0") ca_options.names.push_back(server.host);
    Result<std::unique_ptr<berth::daemon::ClusterCa>> made =
        opened.ok() ? berth::daemon::ClusterCa::Open(**opened, ca_options)
                    : Result<std::unique_ptr<berth::daemon::ClusterCa>>(opened.status());
    if (!made.ok()) {
      std::fprintf(stderr, "berth-agent: %s\n", made.status().message().c_str());
      return 1;
    }
    ca_store = std::move(*opened);
    ca = std::move(*made);
    server.tls = ca->server_tls();
    if (!manager_ca.empty()) server.token_role = berth::tls::kRoleManager;
    ca->Start(system_clock);
  }
  agent_options.sampling = sampling == "random" ? berth::agent::SamplingKind::kRandom
                                                : berth::agent::SamplingKind::kRoundRobin;
  berth::StopSignals signals;  // before any thread starts

  if (!fleet) agent_options.max_nodes = 0;
  berth::agent::Agent agent(agent_options, std::move(*nodes));
  std::unique_ptr<berth::agent_server::NodeFleet> node_fleet;
  if (fleet) {
    Result<std::unique_ptr<berth::agent_server::NodeFleet>> opened =
        berth::agent_server::NodeFleet::Open(agent, data_dir, lifecycle, ca.get());
    if (!opened.ok()) {
      std::fprintf(stderr, "berth-agent: %s\n", opened.status().message().c_str());
      return 1;
    }
    node_fleet = std::move(*opened);
    server.authenticate = [&node_fleet](std::string_view t, berth::api::Peer peer) {
      return node_fleet->Authenticate(t, peer);
    };
  }
  berth::agent_server::AgentCalls calls(agent, node_fleet.get());
  std::unique_ptr<berth::agent_server::AgentRpcServer> rpc_server;
  if (ca && !no_rpc) {
    // --port + 10: agents given ports in a row on one host do not collide.
    if (rpc.port < 0) rpc.port = server.port == 0 ? 0 : std::min(server.port + 10, 65535);
    rpc.host = server.host;
    rpc.token = *token;
    rpc.cert_file = ca->cert_file();
    rpc.key_file = ca->key_file();
    Result<std::unique_ptr<berth::agent_server::AgentRpcServer>> started =
        berth::agent_server::AgentRpcServer::Start(calls, rpc);
    if (!started.ok()) {
      std::fprintf(stderr, "berth-agent: %s\n", started.status().message().c_str());
      return 1;
    }
    rpc_server = std::move(*started);
  }
  berth::api::ApiServer api(server);
  berth::agent_server::AddAgentRoutes(api, calls, rpc_server ? rpc_server->port() : 0);
  if (node_fleet) node_fleet->Start();
  if (Status started = api.Start(); !started.ok()) {
    std::fprintf(stderr, "berth-agent: %s\n", started.message().c_str());
    return 1;
  }
  const std::string rpc_note =
      rpc_server ? "gRPC on port " + std::to_string(rpc_server->port()) + "; " : "";
  std::printf("berth-agent: %s with %u nodes%s listening on %s://%s:%d (%stoken in %s/token%s)\n",
              agent.id().c_str(), agent.nodes().size(),
              fleet ? " (berth-node machines join it)" : "", ca ? "https" : "http",
              server.host.c_str(), api.port(), rpc_note.c_str(), data_dir.c_str(),
              ca ? "; CA in ca.pem" : "");
  std::fflush(stdout);
  signals.Wait();
  if (node_fleet) node_fleet->Stop();  // first: it answers the nodes' waiting requests
  api.Stop();
  if (rpc_server) rpc_server->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return berth::RunProgram("berth-agent", [&] { return Run(argc, argv); });
}
