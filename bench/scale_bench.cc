// scale_bench: one large service through berthd, and berthd idle afterwards.
//
// Writes --nodes nodes (default 10,000; labels az (10 values) and rack (10
// per az), 64 CPUs and 256 GiB each) straight into a new SQLite store, opens
// berthd (daemon::Daemon, default options) on it in this process, and then:
//   create:  POST /v1/services with --replicas tasks (default 100,000),
//            spread over az then rack, 10m CPU each; times the
//            acknowledgement, the moment every replica is placed and stored
//            (the store answers a replica as assigned: one pass places and
//            commits them all; polled every millisecond), the latest
//            assigned_at (stamped after placing, before the commit), and
//            the settled state (also started by the simulated executor:
//            GET /v1/health?wait=settled);
//   idle:    CPU time berthd's process uses over --idle-seconds (default 5)
//            with nothing to do, and the passes it ran meanwhile;
//   change:  one replica fewer (PATCH replicas - 1) until settled: the
//            cost of a pass that handles one change at this size.
// Peak RSS is the whole process's (berthd and this client) after settling.
//
// --task-millicpu M (default 10) sets each replica's CPU: with 6400 a node
// holds 10 replicas, so 1,000,000 replicas on 95,000 nodes leave 50,000
// pending (the idle case of the issue: 1,000,000 stored, 50,000 pending).
//
// Usage: scale_bench [--nodes N] [--replicas R] [--task-millicpu M] [--idle-seconds S] [--quick]
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/api_client.h"
#include "bench_util.h"
#include "daemon/daemon.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"
#include "stored_nodes.h"

namespace berth::bench {
namespace {

using api::Json;

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

// User plus system CPU time of this process, in nanoseconds.
int64_t CpuNs() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto ns = [](timeval t) { return int64_t{t.tv_sec} * 1'000'000'000 + int64_t{t.tv_usec} * 1000; };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

Status WriteNodes(const std::string& data_dir, int nodes) {
  Result<std::unique_ptr<store::SqliteStore>> store =
      store::SqliteStore::Open(data_dir + "/berth.db");
  if (!store.ok()) return store.status();
  return (*store)->Commit(NodeWrites(nodes)).status();
}

// The latest assigned_at of the service's tasks, in ms since the epoch.
int64_t LatestAssignedMs(store::Store& store) {
  Result<std::vector<store::StoredObject>> tasks = store.List("task");
  int64_t latest = 0;
  if (!tasks.ok()) return latest;
  for (const store::StoredObject& t : *tasks) {
    const Json json = Json::parse(t.body, nullptr, false);
    Result<Timestamp> at = ParseRfc3339(json.value("assigned_at", ""));
    if (at.ok()) latest = std::max<int64_t>(latest, at->time_since_epoch().count());
  }
  return latest;
}

// berthd's SQLite store, noting when the commit that stores big.1 as
// assigned returns: the placing pass commits every replica in that one
// transaction, so that is when the placement is durable. A client reading
// through the API sees it a little later (after the store's checkpoint,
// which follows a large commit).
class CommitWatch final : public store::Store {
 public:
  explicit CommitWatch(std::unique_ptr<store::Store> inner) : inner_(std::move(inner)) {}
  Result<int64_t> Commit(const std::vector<store::Write>& writes) override {
    Result<int64_t> committed = inner_->Commit(writes);
    if (committed.ok() && durable_ns_.load() == 0)
      for (const store::Write& w : writes)
        if (w.kind == "task" && w.id.starts_with("big.1.") &&
            w.body.find("\"state\":\"assigned\"") != std::string::npos)
          durable_ns_.store(SteadyNowNs());
    return committed;
  }
  Result<std::optional<store::StoredObject>> Get(std::string_view kind,
                                                 std::string_view id) const override {
    return inner_->Get(kind, id);
  }
  Result<std::vector<store::StoredObject>> List(std::string_view kind) const override {
    return inner_->List(kind);
  }
  Result<std::vector<store::StoredObject>> ListPrefix(std::string_view kind,
                                                      std::string_view prefix) const override {
    return inner_->ListPrefix(kind, prefix);
  }
  int64_t revision() const override { return inner_->revision(); }
  int64_t durable_ns() const { return durable_ns_.load(); }

 private:
  std::unique_ptr<store::Store> inner_;
  std::atomic<int64_t> durable_ns_{0};
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int Run(int nodes, int replicas, int task_millicpu, int idle_seconds, int event_buffer) {
  store::TestDir dir;
  const std::string data_dir = dir.path() + "/data";
  ::mkdir(data_dir.c_str(), 0700);
  const int64_t setup = SteadyNowNs();
  if (Status written = WriteNodes(data_dir, nodes); !written.ok()) {
    std::fprintf(stderr, "scale_bench: %s\n", written.message().c_str());
    return 1;
  }
  Result<std::unique_ptr<store::SqliteStore>> sqlite =
      store::SqliteStore::Open(data_dir + "/berth.db");
  if (!sqlite.ok()) {
    std::fprintf(stderr, "scale_bench: %s\n", sqlite.status().message().c_str());
    return 1;
  }
  auto watch = std::make_shared<CommitWatch>(std::move(*sqlite));
  daemon::DaemonOptions options;
  options.store = watch;
  options.data_dir = data_dir;
  options.port = 0;
  options.new_token = true;  // the store was written without berthd
  options.events.capacity = static_cast<size_t>(event_buffer);
  Result<std::unique_ptr<daemon::Daemon>> berthd = daemon::Daemon::Open(options);
  if (!berthd.ok()) {
    std::fprintf(stderr, "scale_bench: %s\n", berthd.status().message().c_str());
    return 1;
  }
  api::ApiClient client((*berthd)->url(), (*berthd)->token(), 30, (*berthd)->client_tls());
  if (!client.Call("GET", "/v1/health?wait=settled&timeout=600").ok()) return 1;
  std::printf("%d nodes stored and loaded in %.1f s\n", nodes, Seconds(SteadyNowNs() - setup));

  const Json service = {
      {"id", "big"},
      {"replicas", replicas},
      {"task",
       {{"resources", {{"cpu", std::to_string(task_millicpu) + "m"}}},
        {"preferences", {{{"spread", "node.labels.az"}}, {{"spread", "node.labels.rack"}}}}}}};
  const int64_t sent_ms = NowMs();
  const int64_t sent = SteadyNowNs();
  Result<Json> created = client.Call("POST", "/v1/services", service);
  const int64_t acked = SteadyNowNs();
  const int64_t acked_ms = NowMs();
  if (!created.ok()) {
    std::fprintf(stderr, "scale_bench: %s\n", created.status().message().c_str());
    return 1;
  }
  // Durable placement: the pass that places a service's replicas commits
  // them in one transaction, so the first replica read back as assigned (or
  // later) from the store means all of them are. Polled every millisecond.
  int64_t placed = 0;
  for (;;) {
    Result<Json> task = client.Call("GET", "/v1/tasks/big.1");
    if (task.ok() && task->value("state", "pending") != "pending") {
      placed = SteadyNowNs();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!client.Call("GET", "/v1/health?wait=settled&timeout=600").ok()) return 1;
  const int64_t settled = SteadyNowNs();
  const long rss_kib = PeakRssKib();
  std::printf(
      "create %d replicas: acknowledged in %.0f ms; all placed and durable %.0f ms after the "
      "acknowledgement (their commit returned), read back through the API at %.0f ms, settled "
      "(started too) at %.0f ms\n",
      replicas, Seconds(acked - sent) * 1000, Seconds(watch->durable_ns() - acked) * 1000,
      Seconds(placed - acked) * 1000, Seconds(settled - acked) * 1000);

  const uint64_t passes_before = (*berthd)->loop().passes();
  const int64_t cpu_before = CpuNs();
  const int64_t idle_start = SteadyNowNs();
  std::this_thread::sleep_for(std::chrono::seconds(idle_seconds));
  const double idle_cpu = Seconds(CpuNs() - cpu_before) / Seconds(SteadyNowNs() - idle_start);
  std::printf("idle %d s: %.2f%% of a core, %llu passes\n", idle_seconds, idle_cpu * 100,
              static_cast<unsigned long long>((*berthd)->loop().passes() - passes_before));

  const int64_t change = SteadyNowNs();
  const uint64_t passes_change = (*berthd)->loop().passes();
  const uint64_t nanos_change = (*berthd)->loop().pass_nanos();
  const uint64_t visited_change = (*berthd)->loop().tasks_visited();
  Result<Json> changed = client.Call("PATCH", "/v1/services/big", Json{{"replicas", replicas - 1}});
  if (changed.ok()) changed = client.Call("GET", "/v1/health?wait=settled&timeout=600");
  if (!changed.ok()) {
    std::fprintf(stderr, "scale_bench: one replica fewer: %s\n",
                 changed.status().message().c_str());
    return 1;
  }
  const uint64_t change_passes = (*berthd)->loop().passes() - passes_change;
  const double pass_ms = static_cast<double>((*berthd)->loop().pass_nanos() - nanos_change) / 1e6;
  std::printf(
      "one replica fewer: settled in %.1f ms (the PATCH's commit, the passes and the wait); "
      "%llu passes took %.2f ms together (%.2f ms a pass, its commit included) and looked at "
      "%llu tasks\n",
      Seconds(SteadyNowNs() - change) * 1000, static_cast<unsigned long long>(change_passes),
      pass_ms, pass_ms / static_cast<double>(change_passes),
      static_cast<unsigned long long>((*berthd)->loop().tasks_visited() - visited_change));
  std::printf("peak RSS after settling: %ld MiB (this process: berthd and the client)\n",
              rss_kib / 1024);
  berthd->reset();
  const int64_t latest = LatestAssignedMs(*watch);
  std::printf(
      "placed: the last assigned_at (stamped before the commit) is %lld ms after sending, %lld "
      "ms after the acknowledgement\n",
      static_cast<long long>(latest - sent_ms), static_cast<long long>(latest - acked_ms));
  return 0;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  int nodes = 10'000, replicas = 100'000, idle_seconds = 5, task_millicpu = 10;
  int event_buffer = static_cast<int>(berth::daemon::EventLogOptions{}.capacity);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    int* option = arg == "--nodes"           ? &nodes
                  : arg == "--replicas"      ? &replicas
                  : arg == "--task-millicpu" ? &task_millicpu
                  : arg == "--idle-seconds"  ? &idle_seconds
                                             : nullptr;
    if (arg == "--quick") {
      nodes = 100;
      replicas = 1000;
      idle_seconds = 1;
    } else if (option != nullptr && i + 1 < argc &&
               (*option = berth::bench::ParsePositiveInt(argv[++i], 1'000'000)) > 0) {
    } else if (arg == "--event-buffer" && i + 1 < argc &&
               (event_buffer = std::string(argv[i + 1]) == "0"
                                   ? 0
                                   : berth::bench::ParsePositiveInt(argv[i + 1], 10'000'000)) >=
                   0) {
      ++i;
    } else {
      std::fprintf(stderr,
                   "usage: scale_bench [--nodes N] [--replicas R] [--task-millicpu M] "
                   "[--idle-seconds S] [--event-buffer N (0: no events)] [--quick]\n");
      return arg == "--help" ? 0 : 2;
    }
  }
  return berth::bench::Run(nodes, replicas, task_millicpu, idle_seconds, event_buffer);
}
