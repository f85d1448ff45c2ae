// berthd: the Berth control-plane daemon. See docs/berthd.md.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#include "auth/token.h"
#include "core/program.h"
#include "daemon/daemon.h"
#include "tls/certificate.h"

namespace {

// "etcd://h1:p1,h2:p2" -> {"h1:p1", "h2:p2"}.
berth::Result<std::vector<std::string>> EtcdEndpoints(const std::string& url) {
  const std::string scheme = "etcd://";
  if (!url.starts_with(scheme))
    return berth::Status::InvalidArgument("expected etcd://HOST:PORT[,HOST:PORT...], got '" + url +
                                          "'");
  std::vector<std::string> endpoints;
  std::string rest = url.substr(scheme.size());
  for (size_t start = 0; start <= rest.size();) {
    const size_t comma = std::min(rest.find(',', start), rest.size());
    const std::string endpoint = rest.substr(start, comma - start);
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size() ||
        endpoint.find_first_not_of("0123456789", colon + 1) != std::string::npos)
      return berth::Status::InvalidArgument("'" + endpoint + "' is not HOST:PORT");
    endpoints.push_back(endpoint);
    start = comma + 1;
  }
  return endpoints;
}

// The etcd TLS options go together: a client certificate with its key and
// etcd's CA, and all of them only with an etcd store.
berth::Status CheckEtcdTls(const berth::store::EtcdClientOptions& tls, bool etcd) {
  const bool any = !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty();
  if (any && !etcd)
    return berth::Status::InvalidArgument(
        "--etcd-cacert, --etcd-cert and --etcd-key need --store etcd://...");
  if (tls.cert_file.empty() != tls.key_file.empty())
    return berth::Status::InvalidArgument("--etcd-cert and --etcd-key go together");
  if (!tls.cert_file.empty() && tls.ca_file.empty())
    return berth::Status::InvalidArgument(
        "--etcd-cert needs --etcd-cacert (etcd's CA): a client certificate is only sent over "
        "HTTPS");
  return berth::Status::Ok();
}

int Run(int argc, char** argv) {
  berth::daemon::DaemonOptions options;
  CLI::App app{"berthd: the Berth control-plane daemon (REST API on a durable store)"};
  app.add_option("--data-dir", options.data_dir,
                 "Directory of the store (berth.db) and the API token (token); created if absent")
      ->capture_default_str();
  app.add_flag("--new-token", options.new_token,
               "Issue a new API token when the token file is missing although the store holds "
               "data (every client then needs the new token)");
  app.add_option("--host", options.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", options.port, "TCP port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--session-port", options.session_port,
                 "TCP port of the nodes' gRPC sessions, on --host (default 7479, or any free one "
                 "with --port 0; 0: any free port; none with --insecure-http)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--max-sessions-per-address", options.max_sessions_per_address,
                 "Node sessions open at once from one IP address; one more is refused (0: no "
                 "limit; Nomad's rpc_max_conns_per_client)")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  app.add_option("--max-body-bytes", options.max_body_bytes,
                 "Largest request body accepted (413 above)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--threads", options.threads, "HTTP worker threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--event-buffer", options.events.capacity,
                 "Events kept for GET /v1/events and `berth events` (0: none)")
      ->check(CLI::Range(size_t{0}, size_t{10'000'000}))
      ->capture_default_str();
  std::string strategy = "spread";
  app.add_option("--placement-strategy", strategy,
                 "How the full-view engine orders nodes when a task's preferences do not end "
                 "with a node.id preference: spread (SwarmKit's) or binpack (least room left "
                 "first; docs/placement.md)")
      ->check(CLI::IsMember({"spread", "binpack"}))
      ->capture_default_str();
  int64_t quiet_ms = 0, max_ms = 1000;
  app.add_option("--batch-quiet-ms", quiet_ms,
                 "Batch window: a pass waits this long after the last change for more (0: it "
                 "starts as soon as the control loop is free; changes that arrive during a pass "
                 "are handled together by the next one)...")
      ->check(CLI::Range(int64_t{0}, int64_t{60'000}))
      ->capture_default_str();
  app.add_option("--batch-max-ms", max_ms,
                 "...but no longer than this after the first change it covers")
      ->check(CLI::Range(int64_t{1}, int64_t{60'000}))
      ->capture_default_str();
  app.add_option("--task-history-limit", options.reconciler.task_history_limit,
                 "Ended tasks kept per replica slot of a service (per node of a global service); "
                 "older ones are deleted. Negative: keep every ended task")
      ->check(CLI::Range(int64_t{-1}, int64_t{1'000'000}))
      ->capture_default_str();
  std::string down_grace = "0s", unknown_grace = "15s";
  app.add_option("--node-down-grace", down_grace,
                 "How long a node is down before its tasks are replaced elsewhere (SwarmKit "
                 "replaces them at once)")
      ->capture_default_str();
  app.add_option("--node-unknown-grace", unknown_grace,
                 "The same for a node whose state is unknown or disconnected (SwarmKit's "
                 "heartbeat grace: 5 s x 3)")
      ->capture_default_str();
  std::string heartbeat_period = "5s";
  app.add_option("--heartbeat-period", heartbeat_period,
                 "How often berth-node machines heartbeat (SwarmKit's dispatcher: 5s)")
      ->capture_default_str();
  app.add_option("--heartbeat-multiplier", options.node_lifecycle.grace_multiplier,
                 "A berth-node is marked down after this many heartbeat periods without one")
      ->check(CLI::Range(int64_t{2}, int64_t{100}))
      ->capture_default_str();
  std::string agent_token_file;
  app.add_option("--agent", options.agents,
                 "host:port of a berth-agent; repeat for each (places through the agents, "
                 "the three-phase path, instead of berthd's own nodes)");
  app.add_option("--agent-token-file", agent_token_file,
                 "file holding the agents' bearer token (their data directory's 'token')")
      ->check(CLI::ExistingFile);
  std::vector<std::string> agent_ca_files;
  app.add_option("--agent-ca", agent_ca_files,
                 "an agent's CA certificate (its data directory's ca.pem); repeat for each "
                 "agent's. Agents are called over HTTPS and checked against them (an --agent "
                 "given as http://HOST:PORT, an --insecure-http agent, needs none)")
      ->check(CLI::ExistingFile);
  berth::threephase::SchedulerOptions& three_phase = options.agent_placement.scheduler;
  app.add_option("--agent-cluster-percent", three_phase.cluster_percent,
                 "Cp: share of the agents asked for samples per attempt")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--agent-sample-bp", three_phase.node_basis_points,
                 "Np: share of an agent's nodes each sample asks for, in basis points (1/10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{10'000}))
      ->capture_default_str();
  std::string store_url = std::getenv("BERTH_STORE") != nullptr ? std::getenv("BERTH_STORE") : "";
  app.add_option("--store", store_url,
                 "Where the state lives: empty for SQLite in the data directory, or "
                 "etcd://HOST:PORT[,HOST:PORT...] for an etcd cluster shared by several berthd "
                 "replicas (docs/ha.md; default: $BERTH_STORE)");
  app.add_option("--etcd-prefix", options.etcd.prefix, "Key prefix of Berth's objects in etcd")
      ->capture_default_str();
  app.add_option("--etcd-max-txn-ops", options.etcd.max_txn_ops,
                 "etcd's --max-txn-ops: the most writes berthd puts in one transaction")
      ->check(CLI::Range(size_t{2}, size_t{1'000'000}))
      ->capture_default_str();
  berth::store::EtcdClientOptions& etcd_tls = options.etcd.client;
  app.add_option("--etcd-cacert", etcd_tls.ca_file,
                 "etcd's CA (PEM): call etcd over HTTPS and check its certificate against it "
                 "(etcd's --trusted-ca-file side; as etcdctl --cacert)")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-cert", etcd_tls.cert_file,
                 "Client certificate (PEM) berthd presents to etcd, for etcd's "
                 "--client-cert-auth; with --etcd-key and --etcd-cacert")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-key", etcd_tls.key_file, "The --etcd-cert's private key (PEM)")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-max-request-bytes", options.etcd.max_request_bytes,
                 "etcd's --max-request-bytes: the largest request berthd sends it")
      ->check(CLI::Range(size_t{1} << 17, size_t{1} << 30))
      ->capture_default_str();
  std::string leader_ttl = "3s", compact_interval = "5m";
  app.add_option("--leader-ttl", leader_ttl,
                 "With etcd: the leader's lease (at least 2s); another replica leads about this "
                 "long (plus up to 0.5s) after the leader died")
      ->capture_default_str();
  app.add_option("--compact-interval", compact_interval,
                 "With etcd: the leader compacts etcd's history this often, keeping one interval "
                 "(0s: never)")
      ->capture_default_str();
  app.add_option("--advertise-addr", options.leadership.address,
                 "The URL clients and other replicas reach this berthd at (default "
                 "https://HOST:PORT); its host is also a name in berthd's certificate");
  app.add_flag("--insecure-http", options.insecure_http,
               "Serve plain HTTP instead of HTTPS; only on a loopback --host (docs/security.md)");
  app.add_option("--ca-cert", options.ca.ca_cert_file,
                 "The operator's root CA certificate (PEM), instead of one berthd makes at its "
                 "first start")
      ->check(CLI::ExistingFile);
  app.add_option("--ca-key", options.ca.ca_key_file, "The key of --ca-cert (PEM, mode 0600)")
      ->check(CLI::ExistingFile);
  app.add_option("--ca-unlock-key-file", options.ca.unlock_key_file,
                 "The key the CA's key is sealed with in the store (default "
                 "DATA_DIR/ca-unlock-key; every replica on etcd needs the same one)");
  std::string cert_expiry = "2160h";
  app.add_option("--cert-expiry", cert_expiry,
                 "Life of the certificates berthd issues to itself and to nodes (renewed at "
                 "50-80% of it)")
      ->capture_default_str();
  app.set_version_flag("--version", "berthd 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (const auto& [flag, text, out] :
       {std::tuple{"--node-down-grace", &down_grace, &options.node_lifecycle.down_grace},
        {"--node-unknown-grace", &unknown_grace, &options.node_lifecycle.unknown_grace},
        {"--heartbeat-period", &heartbeat_period, &options.node_lifecycle.heartbeat_period},
        {"--leader-ttl", &leader_ttl, &options.leadership.ttl},
        {"--compact-interval", &compact_interval, &options.leadership.compact_interval},
        {"--cert-expiry", &cert_expiry, &options.ca.cert_life}}) {
    berth::Result<berth::Duration> grace = berth::ParseDuration(*text);
    if (grace.ok() && out == &options.node_lifecycle.heartbeat_period &&
        *grace < berth::Duration{10})
      grace = berth::Status::InvalidArgument("must be at least 10ms");
    if (grace.ok() && out == &options.ca.cert_life && *grace < std::chrono::seconds(10))
      grace = berth::Status::InvalidArgument("must be at least 10s");
    if (grace.ok() && out == &options.leadership.ttl && *grace < std::chrono::seconds(2))
      grace = berth::Status::InvalidArgument("must be at least 2s (etcd's shortest lease)");
    if (!grace.ok()) {
      std::fprintf(stderr, "berthd: %s: %s\n", flag, grace.status().message().c_str());
      return 2;
    }
    *out = *grace;
  }
  options.reconciler.placement.strategy = *berth::placement::ParsePlacementStrategy(strategy);
  if (options.ca.ca_cert_file.empty() != options.ca.ca_key_file.empty()) {
    std::fprintf(stderr, "berthd: --ca-cert and --ca-key go together\n");
    return 2;
  }
  if (!options.agents.empty()) {
    if (agent_token_file.empty()) {
      std::fprintf(stderr, "berthd: --agent needs --agent-token-file\n");
      return 2;
    }
    berth::Result<std::string> token = berth::auth::ReadToken(agent_token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "berthd: %s\n", token.status().message().c_str());
      return 2;
    }
    options.agent_token = *token;
    for (const std::string& file : agent_ca_files) {
      berth::Result<std::string> pem = berth::tls::ReadPemFile(file);
      if (!pem.ok()) {
        std::fprintf(stderr, "berthd: --agent-ca: %s\n", pem.status().message().c_str());
        return 2;
      }
      options.agent_trust_pem += *pem;
    }
    for (const std::string& agent : options.agents)
      if (agent_ca_files.empty() && agent.rfind("http://", 0) != 0) {
        std::fprintf(stderr,
                     "berthd: --agent %s: give --agent-ca (the agent's DATA_DIR/ca.pem) to call "
                     "it over HTTPS, or http://%s for an --insecure-http agent\n",
                     agent.c_str(), agent.c_str());
        return 2;
      }
  }
  if (berth::Status etcd = CheckEtcdTls(etcd_tls, !store_url.empty()); !etcd.ok()) {
    std::fprintf(stderr, "berthd: %s\n", etcd.message().c_str());
    return 2;
  }
  if (!store_url.empty()) {
    berth::Result<std::vector<std::string>> endpoints = EtcdEndpoints(store_url);
    if (!endpoints.ok()) {
      std::fprintf(stderr, "berthd: --store: %s\n", endpoints.status().message().c_str());
      return 2;
    }
    options.etcd_endpoints = std::move(*endpoints);
  }
  // As kube-scheduler: a replica that lost the leadership exits, and its
  // supervisor starts it again with a clean state.
  options.lost_leadership = [](const std::string& why) {
    std::fprintf(stderr, "berthd: %s; exiting\n", why.c_str());
    std::fflush(stderr);
    std::_Exit(3);
  };
  options.loop.window = {berth::Duration{quiet_ms}, berth::Duration{std::max(quiet_ms, max_ms)}};
  berth::StopSignals signals;  // before any thread starts

  berth::Result<std::unique_ptr<berth::daemon::Daemon>> daemon =
      berth::daemon::Daemon::Open(options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "berthd: %s\n", daemon.status().message().c_str());
    return 1;
  }
  std::printf("berthd: listening on %s (data directory %s; token in %s/token%s%s)\n",
              (*daemon)->url().c_str(), options.data_dir.c_str(), options.data_dir.c_str(),
              options.insecure_http ? "" : "; CA in ca.pem, digest ",
              (*daemon)->ca() ? (*daemon)->ca()->digest().substr(0, 12).c_str() : "");
  if ((*daemon)->session_port() != 0)
    std::printf("berthd: node sessions (gRPC, mutual TLS) on port %d\n", (*daemon)->session_port());
  if (options.etcd_endpoints.size() > 0) std::printf("berthd: store etcd\n");
  if (const std::vector<std::string> agents = (*daemon)->agent_names(); !agents.empty()) {
    std::string list;
    for (const std::string& a : agents) list += (list.empty() ? "" : ", ") + a;
    std::printf("berthd: placing through %zu agent%s: %s\n", agents.size(),
                agents.size() == 1 ? "" : "s", list.c_str());
  }
  std::fflush(stdout);
  const int signal = signals.Wait();
  std::printf("berthd: stopping (signal %d)\n", signal);
  (*daemon)->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return berth::RunProgram("berthd", [&] { return Run(argc, argv); });
}
