// views_bench: the views an operator reads at scale, answered from the
// control loop's counts (docs/api.md, "Snapshot").
//
// Writes --nodes nodes (default 10,000; labels az and rack, 64 CPUs each)
// and --services services (default 1,000) of --tasks tasks in all (default
// 1,000,000), every task running on a node, straight into a new SQLite
// store; opens berthd (daemon::Daemon) on it in this process, waits for its
// first pass (which loads and counts everything), and times, over --reps
// requests each (default 5; the median and the largest):
//   GET /v1/snapshot      the dashboard's snapshot (and its size);
//   GET /v1/services      what `berth service ls` reads (REPLICAS included);
//   GET /v1/nodes         what `berth node ls` reads (TASKS included);
//   GET /v1/nodes/{id}    `node inspect` (the node's use);
// and, for comparison, GET /v1/tasks?service=<one service>: what `service
// ls` read per service before the counts (times --services).
//
// Usage: views_bench [--nodes N] [--services S] [--tasks T] [--reps R] [--quick]
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/api_client.h"
#include "api/http_server.h"
#include "bench_util.h"
#include "daemon/daemon.h"
#include "daemon/loop/stored_task.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"
#include "stored_nodes.h"
#include "tls/context.h"

namespace berth::bench {
namespace {

using api::Json;

Status WriteCluster(const std::string& data_dir, int nodes, int services, int tasks) {
  Result<std::unique_ptr<store::SqliteStore>> store =
      store::SqliteStore::Open(data_dir + "/berth.db");
  if (!store.ok()) return store.status();
  std::vector<store::Write> writes = NodeWrites(nodes);
  const int per_service = std::max(1, tasks / services);
  for (int s = 0; s < services; ++s) {
    const std::string id = "s" + std::to_string(s);
    const Json service = {{"id", id},
                          {"replicas", per_service},
                          {"spec_version", 1},
                          {"incarnation", 1},
                          {"task", {{"resources", {{"cpu", "10m"}}}}}};
    writes.push_back(store::Write::Create("service", id, service.dump()));
    for (int n = 1; n <= per_service; ++n) {
      daemon::StoredTask t;
      t.id = id + "." + std::to_string(n) + ".1";
      t.service = id;
      t.slot = static_cast<uint64_t>(n);
      t.spec_version = 1;
      t.node = "node-" + std::to_string((s * per_service + n) % nodes);
      t.state = TaskState::kRunning;
      t.message = "started";
      writes.push_back(store::Write::Create("task", t.id, daemon::EncodeStoredTask(t)));
    }
  }
  return (*store)->Commit(writes).status();
}

struct Timing {
  double median_ms = 0, max_ms = 0;
  size_t bytes = 0;
};

Timing Time(api::ApiClient& client, const std::string& path, int reps) {
  std::vector<double> ms;
  Timing t;
  for (int i = 0; i < reps; ++i) {
    const int64_t start = SteadyNowNs();
    Result<Json> answer = client.Call("GET", path);
    ms.push_back(static_cast<double>(SteadyNowNs() - start) / 1e6);
    if (!answer.ok()) {
      std::fprintf(stderr, "views_bench: GET %s: %s\n", path.c_str(),
                   answer.status().message().c_str());
      return {};
    }
    t.bytes = answer->dump().size();
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.max_ms = ms.back();
  return t;
}

// The mean time berthd's handler of `route` took (its histogram in
// /metrics: until the answer is ready to send, before TLS and the client).
double HandlerMs(const daemon::Daemon& berthd, const std::string& route) {
  httplib::Client http(berthd.url());
  http.set_ca_cert_store(tls::NewTrustStore(berthd.client_tls().trust_pem));
  http.set_bearer_token_auth(berthd.token());
  httplib::Result metrics = http.Get("/metrics");
  if (!metrics) return -1;
  const std::string prefix =
      "berth_http_request_duration_seconds_{}{method=\"GET\",route=\"" + route + "\",code=\"200\"}";
  auto sample = [&](const char* part) {
    std::string name = prefix;
    name.replace(name.find("{}"), 2, part);
    return api::MetricSample(metrics->body, name).value_or(0);
  };
  const double count = sample("count");
  return count > 0 ? sample("sum") / count * 1000 : -1;
}

int Run(int nodes, int services, int tasks, int reps) {
  store::TestDir dir;
  const std::string data_dir = dir.path() + "/data";
  ::mkdir(data_dir.c_str(), 0700);
  const int64_t setup = SteadyNowNs();
  if (Status written = WriteCluster(data_dir, nodes, services, tasks); !written.ok()) {
    std::fprintf(stderr, "views_bench: %s\n", written.message().c_str());
    return 1;
  }
  daemon::DaemonOptions options;
  options.data_dir = data_dir;
  options.port = 0;
  options.new_token = true;  // the store was written without berthd
  Result<std::unique_ptr<daemon::Daemon>> berthd = daemon::Daemon::Open(options);
  if (!berthd.ok()) {
    std::fprintf(stderr, "views_bench: %s\n", berthd.status().message().c_str());
    return 1;
  }
  api::ApiClient client((*berthd)->url(), (*berthd)->token(), 600, (*berthd)->client_tls());
  if (!client.Call("GET", "/v1/health?wait=settled&timeout=600").ok()) return 1;
  std::printf("%d nodes, %d services, %d tasks stored and loaded in %.1f s; peak RSS %ld MiB\n",
              nodes, services, tasks, static_cast<double>(SteadyNowNs() - setup) / 1e9,
              PeakRssKib() / 1024);
  const auto say = [&](const char* what, const std::string& path) {
    const Timing t = Time(client, path, reps);
    std::printf("%-28s median %8.2f ms, max %8.2f ms, %9zu bytes\n", what, t.median_ms, t.max_ms,
                t.bytes);
    return t;
  };
  say("GET /v1/snapshot", "/v1/snapshot");
  say("GET /v1/services", "/v1/services");
  say("GET /v1/nodes", "/v1/nodes");
  say("GET /v1/nodes/node-1", "/v1/nodes/node-1");
  const Timing one = say("GET /v1/tasks?service=s0", "/v1/tasks?service=s0");
  std::printf("  of the snapshot's time, berthd's handler (count to text): %.2f ms on average\n",
              HandlerMs(**berthd, "/v1/snapshot"));
  std::printf("service ls before the counts (one task list per service): ~%.0f ms\n",
              one.median_ms * services);
  return 0;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  int nodes = 10'000, services = 1'000, tasks = 1'000'000, reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    int* option = arg == "--nodes"      ? &nodes
                  : arg == "--services" ? &services
                  : arg == "--tasks"    ? &tasks
                  : arg == "--reps"     ? &reps
                                        : nullptr;
    if (arg == "--quick") {
      nodes = 50;
      services = 10;
      tasks = 1000;
      reps = 1;
    } else if (option == nullptr || i + 1 == argc ||
               (*option = berth::bench::ParsePositiveInt(argv[++i], 10'000'000)) <= 0) {
      std::fprintf(stderr,
                   "usage: views_bench [--nodes N] [--services S] [--tasks T] [--reps R] "
                   "[--quick]\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  return berth::bench::Run(nodes, services, tasks, reps);
}
