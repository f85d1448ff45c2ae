// heartbeat_bench: what berth-node heartbeats cost berthd, and so how many
// nodes one berthd holds at the default heartbeat period (5 s).
//
// A berthd (daemon::Daemon on an in-memory store: a heartbeat writes
// nothing, so the store only costs the set-up) runs in this process. --nodes nodes (default
// 100,000) register through its dispatcher, as berth-node does (POST /v1/node/register's handler,
// called in process to save the set-up time). Then:
//   handler:  NodeDispatcher::Heartbeat for every node in turn, in this
//             thread: the cost of one heartbeat without HTTP;
//   http:     --clients client threads (default 8) send POST
//             /v1/node/heartbeat over loopback for --seconds (default 5),
//             each request with the credential of the next node in turn
//             (keep-alive connections, as a berth-node keeps its own),
//             while the heartbeat monitor runs: heartbeats per second;
//   capacity: heartbeats per second x the period is the number of nodes
//             whose heartbeats one berthd answers with the loopback and
//             CPU of this machine (its clients share the same two cores).
// No node goes down during the run: every node's grace (15 s) exceeds the
// run. Usage: heartbeat_bench [--nodes N] [--clients C] [--seconds S] [--quick]
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "daemon/daemon.h"
#include "store/memory_store.h"
#include "store/test_dir.h"

namespace berth::bench {
namespace {

using api::Json;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int Run(int nodes, int clients, int seconds) {
  store::TestDir dir;
  daemon::DaemonOptions options;
  options.data_dir = dir.path() + "/berthd";
  options.port = 0;
  options.store = std::make_shared<store::MemoryStore>();
  // Plain HTTP with credentials only: this measures the dispatcher and the
  // request path of heartbeats as separate HTTP requests, not TLS.
  options.insecure_http = true;
  Result<std::unique_ptr<daemon::Daemon>> berthd = daemon::Daemon::Open(options);
  if (!berthd.ok()) {
    std::fprintf(stderr, "heartbeat_bench: %s\n", berthd.status().message().c_str());
    return 1;
  }
  daemon::NodeDispatcher& dispatcher = (*berthd)->dispatcher();
  const api::Principal join = *dispatcher.Authenticate(*dispatcher.JoinToken());
  std::vector<std::string> credentials, ids;
  const auto registering = std::chrono::steady_clock::now();
  for (int i = 0; i < nodes; ++i) {
    const std::string id = "n" + std::to_string(i);
    Result<Json> joined =
        dispatcher.Register(Json{{"hostname", id},
                                 {"machine", "m" + std::to_string(i)},
                                 {"resources", {{"cpu", "8000m"}, {"memory", int64_t{32} << 30}}},
                                 {"address", "127.0.0.1"}},
                            join);
    if (!joined.ok()) {
      std::fprintf(stderr, "heartbeat_bench: %s\n", joined.status().message().c_str());
      return 1;
    }
    ids.push_back(id);
    credentials.push_back((*joined)["credential"]);
  }
  std::printf("registered %d nodes in %.1f s\n", nodes,
              Seconds(std::chrono::steady_clock::now() - registering));

  const auto handler_start = std::chrono::steady_clock::now();
  for (const std::string& id : ids)
    if (!dispatcher.Heartbeat(id).ok()) return 1;
  const double handler_ns = Seconds(std::chrono::steady_clock::now() - handler_start) * 1e9 / nodes;
  std::printf("handler: %.0f ns per heartbeat (NodeDispatcher::Heartbeat, no HTTP)\n", handler_ns);

  std::atomic<int64_t> sent{0}, failed{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const auto http_start = std::chrono::steady_clock::now();
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", (*berthd)->port());
      client.set_keep_alive(true);
      for (size_t i = c; !stop.load(std::memory_order_relaxed); i += clients) {
        const std::string& credential = credentials[i % credentials.size()];
        httplib::Headers headers = {{"Authorization", "Bearer " + credential}};
        httplib::Result r = client.Post("/v1/node/heartbeat", headers, "", "application/json");
        (r && r->status == 200 ? sent : failed).fetch_add(1, std::memory_order_relaxed);
      }
    });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));  // the measured interval
  stop = true;
  for (std::thread& t : threads) t.join();
  const double elapsed = Seconds(std::chrono::steady_clock::now() - http_start);
  const double per_s = static_cast<double>(sent.load()) / elapsed;
  const double period_s =
      std::chrono::duration<double>(daemon::NodeDispatcherOptions{}.heartbeat_period).count();
  std::printf("http: %d clients, %.1f s: %lld heartbeats answered (%lld failed), %.0f per second\n",
              clients, elapsed, static_cast<long long>(sent.load()),
              static_cast<long long>(failed.load()), per_s);
  std::printf("capacity at the default %.0f s period: %.0f nodes\n", period_s, per_s * period_s);
  std::printf("peak RSS: %ld MiB\n", PeakRssKib() / 1024);
  (*berthd)->Stop();
  return failed.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  int nodes = 100'000, clients = 8, seconds = 5;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--quick") == 0) {
      nodes = 1'000;
      seconds = 1;
    } else if (std::strcmp(argv[i], "--nodes") == 0 && has_value) {
      nodes = berth::bench::ParsePositiveInt(argv[++i], 10'000'000);
    } else if (std::strcmp(argv[i], "--clients") == 0 && has_value) {
      clients = berth::bench::ParsePositiveInt(argv[++i], 256);
    } else if (std::strcmp(argv[i], "--seconds") == 0 && has_value) {
      seconds = berth::bench::ParsePositiveInt(argv[++i], 3600);
    } else {
      std::fprintf(stderr,
                   "usage: heartbeat_bench [--nodes N] [--clients C] [--seconds S] [--quick]\n");
      return 2;
    }
    if (nodes < 0 || clients < 0 || seconds < 0) {
      std::fprintf(stderr, "heartbeat_bench: %s needs a positive integer\n", argv[i - 1]);
      return 2;
    }
  }
  return berth::bench::Run(nodes, clients, seconds);
}
