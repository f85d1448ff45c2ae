// berth-agent: a cluster agent in its own process. See docs/agent.md.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <iostream>

#include "agent/agent.h"
#include "agent_server/agent_service.h"
#include "api/cluster_codec.h"
#include "api/document.h"
#include "api/http_server.h"
#include "auth/token.h"
#include "core/names.h"
#include "core/program.h"
#include "sim/vela_nodes.h"

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
  CLI::App app{"berth-agent: a cluster agent serving sampling and commit requests over HTTP"};
  app.add_option("--id", agent_options.id, "the agent's id (prefix of simulated node ids)")
      ->capture_default_str();
  app.add_option("--data-dir", data_dir, "directory of the API token (token); created if absent")
      ->capture_default_str();
  app.add_option("--host", server.host, "address to listen on")->capture_default_str();
  app.add_option("--port", server.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--nodes", nodes_file,
                 "a JSON or YAML file with the cluster's nodes ({\"nodes\": [...]})");
  app.add_option("--simulate", simulate, "simulate N nodes of Vela's four types instead")
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--sampling", sampling, "random | round-robin")
      ->check(CLI::IsMember({"random", "round-robin"}))
      ->capture_default_str();
  app.add_option("--threads", server.threads, "HTTP worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.set_version_flag("--version", "berth-agent 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (Status valid = berth::CheckId(agent_options.id); !valid.ok()) {
    std::fprintf(stderr, "berth-agent: --id: %s\n", valid.message().c_str());
    return 2;
  }
  if (nodes_file.empty() == (simulate == 0)) {
    std::fprintf(stderr, "berth-agent: give exactly one of --nodes FILE and --simulate N\n");
    return 2;
  }
  Result<std::vector<berth::Node>> nodes =
      simulate > 0
          ? Result<std::vector<berth::Node>>(berth::sim::MakeVelaNodes(agent_options.id, simulate))
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
  agent_options.sampling = sampling == "random" ? berth::agent::SamplingKind::kRandom
                                                : berth::agent::SamplingKind::kRoundRobin;
  berth::StopSignals signals;  // before any thread starts

  berth::agent::Agent agent(agent_options, std::move(*nodes));
  berth::api::ApiServer api(server);
  berth::agent_server::AddAgentRoutes(api, agent);
  if (Status started = api.Start(); !started.ok()) {
    std::fprintf(stderr, "berth-agent: %s\n", started.message().c_str());
    return 1;
  }
  std::printf("berth-agent: %s with %u nodes listening on %s:%d (token in %s/token)\n",
              agent.id().c_str(), agent.nodes().size(), server.host.c_str(), api.port(),
              data_dir.c_str());
  std::fflush(stdout);
  signals.Wait();
  api.Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return berth::RunProgram("berth-agent", [&] { return Run(argc, argv); });
}
