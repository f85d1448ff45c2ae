// placement_bench: times one scheduling pass of the full-view engine on the
// workloads of issue 3 and prints a table.
//
// Each scenario runs in its own forked process, so its peak memory is its own:
// "memory" is the growth of peak RSS from just before the cluster is built to
// just after the pass. Time covers Scheduler::SchedulePending only (not
// building the input), the best and median of --reps runs on fresh state;
// for the rebalance scenarios, placement::RebalanceTarget only.
//
// Usage: placement_bench [--reps N] [--only SUBSTRING] [--quick]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "placement/cluster_state.h"
#include "placement/rebalance_target.h"
#include "placement/scheduler.h"

namespace berth::bench {
namespace {

using placement::ClusterState;
using placement::Scheduler;

// How the tasks are laid out: one-off tasks, or one batched service whose
// preferences are (docs/placement.md):
//   kSpread:   spread over az, then over rack (SwarmKit's);
//   kPack:     spread over az, then pack into rack;
//   kWeighted: spread over az weighted 1..10 by az number, then over rack;
//   kBinpack:  spread over az and rack, then pack=node.id (binpack).
enum class Layout { kOneOff, kSpread, kPack, kWeighted, kBinpack };

struct Scenario {
  std::string name;
  int nodes;
  int tasks;
  Layout layout;
  double target_ms;
  // Instead of the pass: the service is placed on 90% of the nodes, the
  // rest join, and the time is that of placement::RebalanceTarget.
  bool rebalance = false;
  bool service() const { return layout != Layout::kOneOff; }
};

std::vector<PlacementPreference> PreferencesOf(Layout layout) {
  using P = PlacementPreference;
  switch (layout) {
    case Layout::kOneOff:
      return {};
    case Layout::kSpread:
      return {P::Spread("node.labels.az"), P::Spread("node.labels.rack")};
    case Layout::kPack:
      return {P::Spread("node.labels.az"), P::Pack("node.labels.rack")};
    case Layout::kWeighted: {
      P az = P::Spread("node.labels.az");
      for (int i = 0; i < 10; ++i) az.weights.emplace_back("az" + std::to_string(i), i + 1);
      std::sort(az.weights.begin(), az.weights.end());
      return {az, P::Spread("node.labels.rack")};
    }
    case Layout::kBinpack:
      return {P::Spread("node.labels.az"), P::Spread("node.labels.rack"), P::Pack("node.id")};
  }
  return {};
}

struct Outcome {
  double best_ms = 0, median_ms = 0;
  long peak_kib = 0;  // growth of peak RSS
  int placed = 0;
};

long CurrentRssKib() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Node i, with room for every task; labels az (10 values) x rack (10 per az).
void AddBenchNode(int i, ClusterState& state) {
  Node n;
  n.id = "node-" + std::to_string(i);
  n.resources.milli_cpu = 256'000;
  n.resources.memory_bytes = 1LL << 40;
  n.labels["az"] = "az" + std::to_string(i % 10);
  n.labels["rack"] = "rack" + std::to_string((i / 10) % 10);
  (void)state.AddNode(std::move(n));
}

// The nodes (90% of them for a rebalance) and the pending tasks.
void Build(const Scenario& s, ClusterState& state) {
  for (int i = 0; i < (s.rebalance ? s.nodes / 10 * 9 : s.nodes); ++i) AddBenchNode(i, state);
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = 10;
  spec->reservations.memory_bytes = 64LL << 20;
  spec->preferences = PreferencesOf(s.layout);
  Task t;
  t.spec = spec;
  t.service_id = s.service() ? "web" : "";
  if (s.service()) t.spec_version = 1;
  for (int i = 0; i < s.tasks; ++i) {
    t.id = "task-" + std::to_string(i);
    (void)state.AddTask(t);
  }
}

Outcome RunScenario(const Scenario& s, int reps) {
  Outcome out;
  long start_kib = CurrentRssKib();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    auto state = std::make_unique<ClusterState>();
    Build(s, *state);
    Scheduler scheduler(*state);
    auto t0 = std::chrono::steady_clock::now();
    auto result = scheduler.SchedulePending(Timestamp{});
    auto t1 = std::chrono::steady_clock::now();
    out.placed =
        static_cast<int>(std::count_if(result.decisions.begin(), result.decisions.end(),
                                       [](const auto& d) { return d.node != placement::kNoNode; }));
    if (s.rebalance) {
      for (int i = s.nodes / 10 * 9; i < s.nodes; ++i) AddBenchNode(i, *state);
      t0 = std::chrono::steady_clock::now();
      const std::vector<uint32_t> target =
          placement::RebalanceTarget(*state, *state->FindService("web"), "web", state->task(0).spec,
                                     2, s.tasks, {}, Timestamp{});
      t1 = std::chrono::steady_clock::now();
      out.placed = 0;
      for (uint32_t n : target) out.placed += static_cast<int>(n);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (r == 0) out.peak_kib = PeakRssKib() - start_kib;
  }
  std::sort(ms.begin(), ms.end());
  out.best_ms = ms.front();
  out.median_ms = ms[ms.size() / 2];
  return out;
}

int Main(int argc, char** argv) {
  int reps = 5;
  bool quick = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (arg == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr,
                   "usage: placement_bench [--reps N] [--only SUBSTRING] [--quick]\n"
                   "unknown argument '%s'\n",
                   arg.c_str());
      return 2;
    }
  }
  // Targets from issue 3 (one core); 0 = no stated target.
  std::vector<Scenario> scenarios = {
      {"one-off 1k nodes x 1k tasks", 1'000, 1'000, Layout::kOneOff, 0},
      {"one-off 1k nodes x 10k tasks", 1'000, 10'000, Layout::kOneOff, 0},
      {"one-off 1k nodes x 100k tasks", 1'000, 100'000, Layout::kOneOff, 250},
      {"one-off 100k nodes x 100k tasks", 100'000, 100'000, Layout::kOneOff, 0},
      {"service 10k nodes x 100k tasks (az x rack)", 10'000, 100'000, Layout::kSpread, 15},
      {"service 100k nodes x 1M tasks (az x rack)", 100'000, 1'000'000, Layout::kSpread, 200},
      // Issue 18: each within 1.5x of the plain spread of the same size.
      {"pack 10k nodes x 100k tasks (az, pack rack)", 10'000, 100'000, Layout::kPack, 0},
      {"pack 100k nodes x 1M tasks (az, pack rack)", 100'000, 1'000'000, Layout::kPack, 0},
      {"weighted 10k nodes x 100k tasks (az 1..10)", 10'000, 100'000, Layout::kWeighted, 0},
      {"weighted 100k nodes x 1M tasks (az 1..10)", 100'000, 1'000'000, Layout::kWeighted, 0},
      {"binpack 10k nodes x 100k tasks (az x rack)", 10'000, 100'000, Layout::kBinpack, 0},
      {"binpack 100k nodes x 1M tasks (az x rack)", 100'000, 1'000'000, Layout::kBinpack, 0},
      // Issue 18's rebalancing: the target after 10% of the nodes joined.
      {"rebalance 10k nodes x 100k tasks (az x rack)", 10'000, 100'000, Layout::kSpread, 0, true},
      {"rebalance 100k nodes x 1M tasks (az x rack)", 100'000, 1'000'000, Layout::kSpread, 0, true},
  };
  if (quick)
    for (auto& s : scenarios) s.nodes = std::max(10, s.nodes / 100), s.tasks /= 100;
  std::printf("%-44s %10s %10s %8s %12s %12s %10s\n", "scenario", "best ms", "median ms", "target",
              "peak MiB", "budget MiB", "placed");
  int failures = 0;
  for (const Scenario& s : scenarios) {
    if (!only.empty() && s.name.find(only) == std::string::npos) continue;
    Outcome o;
    if (!RunIsolated(
            [&] { return RunScenario(s, s.tasks >= 1'000'000 ? std::min(reps, 3) : reps); }, &o)) {
      std::printf("%-44s failed\n", s.name.c_str());
      ++failures;
      continue;
    }
    // Budget from issue 3: 1 KiB per node plus 200 bytes per task.
    double budget_mib = (s.nodes * 1024.0 + s.tasks * 200.0) / (1 << 20);
    char target[16] = "-";
    if (s.target_ms > 0) std::snprintf(target, sizeof target, "%.0f", s.target_ms);
    std::printf("%-44s %10.2f %10.2f %8s %12.1f %12.1f %10d\n", s.name.c_str(), o.best_ms,
                o.median_ms, target, o.peak_kib / 1024.0, budget_mib, o.placed);
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) { return berth::bench::Main(argc, argv); }
