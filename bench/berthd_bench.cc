// berthd_bench: berthd end to end on loopback, printing a table.
//
// A berthd (daemon::Daemon: HTTP server, SQLite store in a temporary data
// directory, control loop with the full-view engine) runs in this process;
// clients talk to it over loopback HTTP exactly as `berth` does. First
// --nodes nodes (default 20,000; 8 CPUs each) are registered from
// --register-clients clients (default 4); with
// --agents A, berthd instead places through A berth-agent processes (the
// three-phase path) that simulate --nodes / A nodes each (Vela's mix). Then:
//   fixed load: one client submits one-replica services (0.1 CPU) at --rate
//               tasks/s (default 1,000) for --seconds (default 5);
//   saturation: --clients clients (default 8) submit --burst services
//               (default 10,000) as fast as berthd acknowledges them.
// Each phase ends when the control loop has settled (GET /v1/health
// ?wait=settled). Submission throughput is acknowledged submissions per
// second of the submitting phase; placement throughput is tasks placed per
// second from the first submission to the settled state; latency is a
// task's assigned_at minus the time its submission was sent (the same
// clock, milliseconds).
//
//   one service: with --replicas R, one service of R replicas (0.1 CPU),
//               from its submission to the settled state.
//               Then GET /v1/tasks?service=big three times, on berthd
//               and (with --etcd) on a second replica (a follower).
//   after the saturation phase and the service: berthd's store and
//               control-loop counters so far ("store so far": API writes
//               and the commits that carried them, all commits, passes,
//               failed passes, full lists of the state, time in passes).
//   one job:    with --job-tasks T, one job of T named tasks (0.1 CPU),
//               until its submission is acknowledged and until the
//               settled state (one task admitted and placed per node).
// With --etcd, berthd keeps its state in a 3-member etcd started on
// loopback ports (etcd's default limits, or --max-txn-ops N for members and
// berthd with --etcd-max-txn-ops N) instead of SQLite, and the bench
// first measures what that etcd itself writes: --raw-puts (default 5,000)
// creates of new 512-byte keys (a service's record is one) from 8 and from
// 32 threads sharing one client, a key a transaction, then 16 keys a
// transaction: the physical limit Berth's writes are compared with. The agents
// serve their gRPC service, which berthd calls, unless --agent-https (then
// every call is an HTTPS request, as before the gRPC service).
//
// Usage: berthd_bench [--nodes N] [--agents A] [--rate R] [--seconds S] [--burst B]
//                     [--quick] [--batch-quiet-ms Q] [--batch-max-ms M]
//                     [--agent-sample-bp NP] [--agent-cluster-percent CP] [--clients C]
//                     [--replicas R] [--job-tasks T] [--etcd] [--raw-puts P]
//                     [--etcd-max-txn-ops N] [--http] [--agent-https] [--register-clients C]
// (--batch-*: berthd's batch window; --agent-*: berthd's Np and Cp with agents)
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/api_client.h"
#include "api/http_server.h"
#include "bench_util.h"
#include "daemon/daemon.h"
#include "process.h"
#include "store/etcd_store.h"
#include "store/etcd_test_cluster.h"
#include "store/test_dir.h"
#include "tls/context.h"

namespace berth::bench {
namespace {

using api::Json;
using Clock = std::chrono::system_clock;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

struct Phase {
  int64_t tasks = 0;
  double submit_per_s = 0, placed_per_s = 0;
  int64_t p50_ms = 0, p99_ms = 0, max_ms = 0;
};

class Bench {
 public:
  Bench(const std::string& server, const std::string& token, tls::Credentials tls)
      : server_(server), token_(token), tls_(std::move(tls)) {}

  // One service of `replicas` replicas: seconds from its submission to the
  // settled state (every task placed and committed).
  double OneService(int replicas) {
    api::ApiClient client(server_, token_, 600, tls_);
    const auto start = std::chrono::steady_clock::now();
    if (!client
             .Call("POST", "/v1/services",
                   Json{{"id", "big"},
                        {"replicas", replicas},
                        {"task", {{"resources", {{"cpu", "100m"}}}}}})
             .ok() ||
        !client.Call("GET", "/v1/health?wait=settled&timeout=600").ok())
      std::fprintf(stderr, "the service was refused or did not settle\n");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // berthd's counters so far (/metrics): how many commits carried the
  // API's writes and how many there were in all (the control loop's are the
  // difference), and the control loop's passes, full lists and time. A
  // counter berthd no longer exports reads "?", not 0.
  std::string StoreCounters() const {
    httplib::Client http(server_);
    if (!tls_.trust_pem.empty()) {
      http.set_ca_cert_store(tls::NewTrustStore(tls_.trust_pem));
      http.enable_server_certificate_verification(true);
    }
    http.set_bearer_token_auth(token_);
    const httplib::Result res = http.Get("/metrics");
    if (!res || res->status != 200) return "metrics unreadable";
    auto value = [&](const char* name, double scale = 1) {
      const std::optional<double> sample = api::MetricSample(res->body, name);
      return sample ? std::to_string(std::llround(*sample * scale)) : std::string("?");
    };
    return value("berth_store_api_writes_total") + " API writes in " +
           value("berth_store_api_commits_total") + " commits; " +
           value("berth_store_commit_duration_seconds_count") + " commits in all; " +
           value("berth_control_passes_total") + " passes, " +
           value("berth_control_pass_errors_total") + " failed, " +
           value("berth_store_lists_total") + " full lists; passes took " +
           value("berth_control_pass_duration_seconds_sum", 1000) + " ms in all; mean commit " +
           Mean(res->body, "berth_store_commit_duration_seconds") + " ms";
  }

  // A histogram's mean in ms since berthd started, as text ("?" if absent).
  static std::string Mean(const std::string& metrics, const std::string& name) {
    const std::optional<double> sum = api::MetricSample(metrics, name + "_sum");
    const std::optional<double> count = api::MetricSample(metrics, name + "_count");
    if (!sum || !count || *count == 0) return "?";
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", *sum * 1000 / *count);
    return text;
  }

  // One job of `tasks` tasks, each named: seconds until its submission is
  // acknowledged (stored whole), and until the settled state (a task
  // admitted and placed on every worker, one per node).
  std::pair<double, double> OneJob(int tasks) {
    Json job = {{"id", "batch"},
                {"requestor", "ci"},
                {"task", {{"resources", {{"cpu", "100m"}}}}},
                {"tasks", Json::array()}};
    for (int i = 1; i <= tasks; ++i)
      job["tasks"].push_back({{"name", "test-" + std::to_string(i)}, {"duration", 600}});
    api::ApiClient client(server_, token_, 600, tls_);
    const auto start = std::chrono::steady_clock::now();
    if (Result<Json> submitted = client.Call("POST", "/v1/jobs", job); !submitted.ok())
      std::fprintf(stderr, "the job was refused: %s\n", submitted.status().message().c_str());
    const double acknowledged =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!client.Call("GET", "/v1/health?wait=settled&timeout=600").ok())
      std::fprintf(stderr, "the job did not settle\n");
    return {acknowledged,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  }

  // Seconds one GET of `path` takes (answered whole).
  double Read(const std::string& path) {
    api::ApiClient client(server_, token_, 600, tls_);
    const auto start = std::chrono::steady_clock::now();
    if (Result<Json> answer = client.Call("GET", path); !answer.ok())
      std::fprintf(stderr, "GET %s failed: %s\n", path.c_str(), answer.status().message().c_str());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // Until berthd leads (at once without etcd).
  bool WaitLeading() {
    api::ApiClient client(server_, token_, 30, tls_);
    for (int i = 0; i < 3000; ++i) {
      Result<Json> health = client.Call("GET", "/v1/health");
      if (health.ok() && health->value("role", "") != "follower") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll with a bound
    }
    return false;
  }

  void RegisterNodes(int count, int clients) {
    Parallel(clients, count, [&](api::ApiClient& client, int i) {
      const Json node = {{"id", "n" + std::to_string(i)},
                         {"resources", {{"cpu", 8}, {"memory", "32Gi"}}},
                         {"labels", {{"az", "az" + std::to_string(i % 10)}}}};
      return client.Call("POST", "/v1/nodes", node).ok();
    });
  }

  // Submits `count` one-replica services from `clients` threads, at most
  // `rate` per second overall (0: no limit); returns the phase's numbers.
  Phase Submit(const std::string& prefix, int count, int clients, double rate) {
    const int64_t first = NowMs();
    const auto start = std::chrono::steady_clock::now();
    Parallel(clients, count, [&](api::ApiClient& client, int i) {
      if (rate > 0)
        std::this_thread::sleep_until(
            start + std::chrono::microseconds(static_cast<int64_t>(i * 1e6 / rate)));
      const std::string id = prefix + std::to_string(i);
      const int64_t sent = NowMs();
      const bool ok =
          client
              .Call("POST", "/v1/services",
                    Json{{"id", id}, {"replicas", 1}, {"task", {{"resources", {{"cpu", "100m"}}}}}})
              .ok();
      std::lock_guard lock(mu_);
      sent_ms_[id] = sent;
      return ok;
    });
    const double submit_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    api::ApiClient client(server_, token_, 30, tls_);
    if (!client.Call("GET", "/v1/health?wait=settled&timeout=600").ok())
      std::fprintf(stderr, "did not settle\n");
    const int64_t settled = NowMs();
    Phase phase = Latencies(client, prefix);
    phase.submit_per_s = count / submit_s;
    phase.placed_per_s = phase.tasks * 1000.0 / std::max<int64_t>(1, settled - first);
    return phase;
  }

 private:
  template <typename Fn>
  void Parallel(int threads, int count, Fn fn) {
    std::atomic<int> next{0}, failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        api::ApiClient client(server_, token_, 30, tls_);
        for (int i; (i = next.fetch_add(1)) < count;) failures += !fn(client, i);
      });
    for (auto& w : workers) w.join();
    if (failures > 0) std::fprintf(stderr, "%d requests failed\n", failures.load());
  }

  Phase Latencies(api::ApiClient& client, const std::string& prefix) {
    Phase phase;
    Result<Json> tasks = client.Call("GET", "/v1/tasks");
    std::vector<int64_t> latencies;
    if (!tasks.ok()) return phase;
    for (const Json& t : (*tasks)["tasks"]) {
      const std::string service = t.value("service", "");
      if (!service.starts_with(prefix) || !t.contains("assigned_at")) continue;
      const Result<Timestamp> at = ParseRfc3339(t["assigned_at"].get<std::string>());
      std::lock_guard lock(mu_);
      auto sent = sent_ms_.find(service);
      if (!at.ok() || sent == sent_ms_.end()) continue;
      latencies.push_back(at->time_since_epoch().count() - sent->second);
    }
    std::sort(latencies.begin(), latencies.end());
    phase.tasks = static_cast<int64_t>(latencies.size());
    if (!latencies.empty()) {
      phase.p50_ms = latencies[latencies.size() / 2];
      phase.p99_ms = latencies[std::min(latencies.size() - 1, latencies.size() * 99 / 100)];
      phase.max_ms = latencies.back();
    }
    return phase;
  }

  std::string server_, token_;
  tls::Credentials tls_;
  std::mutex mu_;
  std::map<std::string, int64_t> sent_ms_;  // service id -> submission sent
};

// etcd's own write rate: transactions of `keys` creates of new 512-byte
// keys (a service's record is one), `count` keys in all, from `threads`
// threads over one client (one HTTP/2 connection per member, as berthd's).
// Keys written per second.
double RawPuts(const std::vector<std::string>& endpoints, int threads, int count, int keys) {
  store::EtcdClientOptions options;
  options.endpoints = endpoints;
  store::EtcdClient client(options);
  const std::string value(512, 'v');
  const store::Write create = store::Write::Create("raw", "key", value);
  const std::string prefix = "/raw/" + std::to_string(threads) + "x" + std::to_string(keys) + "/";
  std::atomic<int> next{0}, failures{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i; (i = next.fetch_add(keys)) < count;) {
        etcdserverpb::TxnRequest txn;
        for (int k = i; k < i + keys; ++k) {
          const std::string key = prefix + std::to_string(k);
          *txn.add_compare() = store::EtcdCompare(key, create);  // absent, as berthd's creates
          etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
          put->set_key(key);
          put->set_value(value);
        }
        Result<etcdserverpb::TxnResponse> answer = client.Txn(txn);
        failures += !answer.ok() || !answer->succeeded();
      }
    });
  for (std::thread& w : workers) w.join();
  if (failures > 0) std::fprintf(stderr, "%d raw transactions failed\n", failures.load());
  const int written = (count + keys - 1) / keys * keys;
  return written / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// `count` berth-agent processes sharing one token, `nodes` simulated nodes
// in all; their addresses go to `options`.
std::vector<std::unique_ptr<testing_support::Process>> StartAgents(int count, int nodes,
                                                                   const std::string& dir,
                                                                   bool http, bool no_rpc,
                                                                   daemon::DaemonOptions* options) {
  std::vector<std::unique_ptr<testing_support::Process>> agents;
  for (int i = 0; i < count; ++i) {
    const int share = nodes / count + (i < nodes % count ? 1 : 0);
    // A data directory (and CA) each, all with the first one's token.
    const std::string data_dir = dir + "/agent" + std::to_string(i);
    std::filesystem::create_directories(data_dir);
    if (i > 0) std::filesystem::copy_file(dir + "/agent0/token", data_dir + "/token");
    std::vector<std::string> argv = {BERTH_AGENT_BINARY,
                                     "--id",
                                     "agent" + std::to_string(i),
                                     "--simulate",
                                     std::to_string(std::max(share, 1)),
                                     "--port",
                                     "0",
                                     "--data-dir",
                                     data_dir};
    if (http) argv.push_back("--insecure-http");
    if (no_rpc) argv.push_back("--no-rpc");
    agents.push_back(std::make_unique<testing_support::Process>(argv));
    const std::string port = testing_support::PortInLine(
        agents.back()->WaitForLine("listening on", std::chrono::seconds(60)));
    if (port.empty()) return {};
    options->agents.push_back("127.0.0.1:" + port);
    if (!http) options->agent_trust_pem += api::TrustIn(data_dir).trust_pem;
  }
  options->agent_token = testing_support::FirstLine(dir + "/agent0/token");
  return agents;
}

// GET /v1/tasks?service=big (the --replicas service's tasks), three times:
// the first on etcd also lists the replica's read cache.
void ReadTasks(const char* replica, Bench& bench) {
  std::printf("GET /v1/tasks?service=big on the %s:", replica);
  for (int i = 0; i < 3; ++i) std::printf(" %.3f s", bench.Read("/v1/tasks?service=big"));
  std::printf("\n");
}

int Main(int argc, char** argv) {
  int nodes = 20'000, agents = 0, rate = 1'000, seconds = 5, burst = 10'000, quiet_ms = 0,
      max_ms = 0, sample_bp = 0, cluster_percent = 0, clients = 8, threads = 0, replicas = 0,
      job_tasks = 0, raw_puts = 5'000, register_clients = 4, etcd_txn_ops = 0;
  bool etcd = false, http = false, agent_https = false;
  // Each integer option with its upper bound (berthd's own for its options).
  struct IntOption {
    const char* name;
    int* value;
    long max;
  };
  const IntOption options_table[] = {{"--nodes", &nodes, 10'000'000},
                                     {"--agents", &agents, 64},
                                     {"--rate", &rate, 1'000'000},
                                     {"--seconds", &seconds, 3'600},
                                     {"--burst", &burst, 10'000'000},
                                     {"--clients", &clients, 256},
                                     {"--threads", &threads, 1'024},
                                     {"--batch-quiet-ms", &quiet_ms, 60'000},
                                     {"--batch-max-ms", &max_ms, 60'000},
                                     {"--agent-sample-bp", &sample_bp, 10'000},
                                     {"--agent-cluster-percent", &cluster_percent, 100},
                                     {"--replicas", &replicas, 10'000'000},
                                     {"--job-tasks", &job_tasks, 100'000},
                                     {"--raw-puts", &raw_puts, 1'000'000},
                                     {"--register-clients", &register_clients, 256},
                                     {"--etcd-max-txn-ops", &etcd_txn_ops, 100'000}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const IntOption* option = nullptr;
    for (const IntOption& o : options_table)
      if (arg == o.name) option = &o;
    if (arg == "--etcd" || arg == "--http" || arg == "--agent-https") {
      (arg == "--etcd" ? etcd : arg == "--http" ? http : agent_https) = true;
      continue;
    }
    if (arg == "--quick") {
      nodes = 200, rate = 200, seconds = 1, burst = 200, raw_puts = 320;
    } else if (option == nullptr || i + 1 >= argc ||
               (*option->value = ParsePositiveInt(argv[++i], option->max)) < 0) {
      std::fprintf(
          stderr,
          "usage: berthd_bench [--nodes N] [--agents A] [--rate R] [--seconds S] [--burst B]\n"
          "                    [--quick] [--batch-quiet-ms Q] [--batch-max-ms M]\n"
          "                    [--agent-sample-bp NP] [--agent-cluster-percent CP]\n"
          "                    [--clients C] [--replicas R] [--job-tasks T]\n"
          "                    [--etcd] [--raw-puts P] [--etcd-max-txn-ops N] [--http]\n"
          "                    [--agent-https] [--register-clients C]\n"
          "  --http: berthd and its agents serve plain HTTP (default HTTPS)\n"
          "  --agent-https: the agents serve no gRPC, so berthd calls them over HTTPS\n");
      if (arg == "--help") return 0;
      if (option != nullptr)
        std::fprintf(stderr, "bad argument '%s': expected an integer from 1 to %ld\n", arg.c_str(),
                     option->max);
      else
        std::fprintf(stderr, "bad argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (etcd_txn_ops > 0 && !etcd) {
    std::fprintf(stderr, "berthd_bench: --etcd-max-txn-ops is for etcd: give --etcd too\n");
    return 2;
  }
  store::TestDir dir;
  daemon::DaemonOptions options;
  options.data_dir = dir.path() + "/data";
  options.port = 0;
  options.insecure_http = http;
  options.max_body_bytes = 64 << 20;  // a job of 100,000 named tasks
  if (threads > 0) options.threads = threads;
  if (quiet_ms > 0) options.loop.window.quiet = Duration{quiet_ms};
  if (max_ms > 0) options.loop.window.max_delay = Duration{max_ms};
  if (sample_bp > 0) options.agent_placement.scheduler.node_basis_points = sample_bp;
  if (cluster_percent > 0) options.agent_placement.scheduler.cluster_percent = cluster_percent;
  std::vector<std::unique_ptr<testing_support::Process>> agent_processes =
      StartAgents(agents, nodes, dir.path() + "/agents", http, agent_https, &options);
  if (agent_processes.size() != static_cast<size_t>(agents)) {
    std::fprintf(stderr, "berthd_bench: a berth-agent did not start\n");
    return 1;
  }
  std::unique_ptr<store::EtcdTestCluster> etcd_cluster;
  if (etcd) {
    std::vector<std::string> flags;
    if (etcd_txn_ops > 0) {
      flags.push_back("--max-txn-ops=" + std::to_string(etcd_txn_ops));
      options.etcd.max_txn_ops = static_cast<size_t>(etcd_txn_ops);
    }
    etcd_cluster = std::make_unique<store::EtcdTestCluster>(3, flags);
    if (!etcd_cluster->ok()) {
      std::fprintf(stderr, "berthd_bench: %s\n", etcd_cluster->error().c_str());
      return 1;
    }
    options.etcd_endpoints = etcd_cluster->Endpoints();
    for (const auto& [threads, keys] : {std::pair{4, 1}, {8, 1}, {32, 1}, {32, 16}})
      std::printf("etcd itself, %d writers, %d key%s a transaction: %.0f keys/s\n", threads, keys,
                  keys == 1 ? "" : "s", RawPuts(options.etcd_endpoints, threads, raw_puts, keys));
  }
  Result<std::unique_ptr<daemon::Daemon>> berthd = daemon::Daemon::Open(options);
  if (!berthd.ok()) {
    std::fprintf(stderr, "berthd_bench: %s\n", berthd.status().message().c_str());
    return 1;
  }
  Bench bench((*berthd)->url(), (*berthd)->token(), (*berthd)->client_tls());
  std::printf("transport: %s%s\n", http ? "plain HTTP" : "HTTPS (TLS 1.3, keep-alive)",
              agents == 0 || http ? ""
              : agent_https       ? "; agents over HTTPS"
                                  : "; agents over gRPC (TLS)");
  if (!bench.WaitLeading()) {
    std::fprintf(stderr, "berthd_bench: berthd did not lead within 30 s\n");
    return 1;
  }
  std::printf("store: %s\n", etcd ? "etcd, 3 members on loopback" : "SQLite");
  if (agents == 0) {
    auto start = std::chrono::steady_clock::now();
    bench.RegisterNodes(nodes, register_clients);
    const double register_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("registered %d nodes from %d clients in %.1f s (%.0f/s)\n", nodes, register_clients,
                register_s, nodes / register_s);
  } else {
    std::printf("%d berth-agent processes with %d simulated nodes in all\n", agents, nodes);
  }
  std::printf("%-22s %8s %10s %10s %8s %8s %8s\n", "phase", "tasks", "submit/s", "placed/s",
              "p50 ms", "p99 ms", "max ms");
  auto print = [](const char* name, const Phase& p) {
    std::printf("%-22s %8lld %10.0f %10.0f %8lld %8lld %8lld\n", name,
                static_cast<long long>(p.tasks), p.submit_per_s, p.placed_per_s,
                static_cast<long long>(p.p50_ms), static_cast<long long>(p.p99_ms),
                static_cast<long long>(p.max_ms));
    std::fflush(stdout);
  };
  const std::string fixed = "fixed load " + std::to_string(rate) + "/s";
  print(fixed.c_str(), bench.Submit("f", rate * seconds, 1, rate));
  std::printf("store so far: %s\n", bench.StoreCounters().c_str());
  const std::string saturation = "saturation, " + std::to_string(clients) + " clients";
  print(saturation.c_str(), bench.Submit("s", burst, clients, 0));
  std::printf("store so far: %s\n", bench.StoreCounters().c_str());
  if (replicas > 0) {
    std::printf("one service of %d replicas: placed and committed in %.2f s\n", replicas,
                bench.OneService(replicas));
    std::printf("store so far: %s\n", bench.StoreCounters().c_str());
    std::fflush(stdout);
    ReadTasks("leader", bench);
    if (etcd) {
      // A second replica on the same etcd: its lists come from its own read
      // cache, listed at its first read.
      daemon::DaemonOptions follower_options = options;
      follower_options.data_dir = dir.path() + "/follower";
      std::filesystem::create_directories(follower_options.data_dir);
      if (!http)  // the CA's key, sealed in etcd, is unlocked with it
        std::filesystem::copy_file(options.data_dir + "/ca-unlock-key",
                                   follower_options.data_dir + "/ca-unlock-key");
      Result<std::unique_ptr<daemon::Daemon>> follower = daemon::Daemon::Open(follower_options);
      if (!follower.ok()) {
        std::fprintf(stderr, "berthd_bench: follower: %s\n", follower.status().message().c_str());
        return 1;
      }
      Bench on_follower((*follower)->url(), (*follower)->token(), (*follower)->client_tls());
      ReadTasks("follower", on_follower);
    }
  }
  if (job_tasks > 0) {
    const auto [acknowledged, settled] = bench.OneJob(job_tasks);
    std::printf("one job of %d tasks: acknowledged in %.2f s, %d admitted and placed in %.2f s\n",
                job_tasks, acknowledged, std::min(job_tasks, nodes), settled);
  }
  std::printf("peak RSS %.0f MiB (this process: berthd and the clients)\n", PeakRssKib() / 1024.0);
  return 0;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) { return berth::bench::Main(argc, argv); }
