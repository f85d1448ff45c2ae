// threephase_bench: the three-phase path at Vela's scale, printing a table.
//
// 10 agents x 2,000 nodes (and x 10,000) of four node types: small cloud
// (2 CPU, 4 GiB), medium cloud (8 CPU, 32 GiB), large cloud (32 CPU,
// 128 GiB) and constrained edge nodes (1 CPU, 2 GiB, battery and geo labels),
// 30/30/10/30 percent: 130,000 CPUs over 20,000 nodes. Tasks need 1 CPU and
// 1 GiB or 0.5 CPU and 512 MiB; one in twenty is aimed at edge nodes within
// 10 km of a point with at least 30% battery (about 5,250 such slots). At
// 20,000 nodes the 100,000 tasks end at about 60% of the CPU, at 100,000
// nodes at about 12%. All tasks are submitted at once (saturation), spread round-robin
// over 1, 2 or 4 scheduler instances, each with 2 samplers and 2 decision
// pipelines, all sharing the agents in process.
//
// Columns: tasks bound per second of wall time; p50/p99 of each phase per
// task (summed over its attempts) and end to end (submit -> bound, which at
// saturation is mostly waiting in the queue); reschedules (attempts after
// the first); conflicts per bound task; failed tasks; over-committed nodes
// (must be 0). Below a row: failed tasks that a node could still take at
// the end (must be 0) and attempts widened to every agent.
//
// Usage: threephase_bench [--tasks N] [--quick] [--only-small]
//                         [--instances N] [--m M]   (one configuration only)
//                         [--samplers N] [--deciders N]  (threads per instance)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "bench_util.h"
#include "sim/vela_nodes.h"
#include "threephase/scheduler_instance.h"

namespace berth::bench {
namespace {

using threephase::SchedulerInstance;
using threephase::TaskOutcome;

struct Setup {
  int agents, nodes_per_agent, tasks, instances;
  size_t m;
  agent::ResourceScoring scoring;
  int samplers, deciders;  // per instance; 0: SchedulerOptions' defaults
};

struct Row {
  double tasks_per_s = 0;
  int64_t p50[4] = {}, p99[4] = {};  // sampling, decision, commit, end to end (ns)
  uint64_t reschedules = 0, conflicts = 0, conflicted_commits = 0, bound = 0, failed = 0;
  int overcommitted = 0;
  // Failed tasks that some agent could still place once the run is over
  // (asked about every node): failed while capacity existed. Must be 0.
  int failed_with_room = 0;
  uint64_t widened = 0;                        // attempts that asked every agent
  std::map<std::string, int> failure_reasons;  // reason -> failed tasks
};

// Failed tasks (indexes into MakeTasks' list) that a node of some agent
// still passes at the end of the run.
int FailedWithRoom(const std::vector<std::unique_ptr<agent::Agent>>& agents,
                   const std::vector<agent::PlacementTask>& tasks,
                   const std::vector<size_t>& failed) {
  int with_room = 0;
  for (size_t i : failed) {
    const agent::SampleRequest request{tasks[i], 10'000, std::chrono::seconds(10), ""};
    for (const auto& a : agents)
      if (!a->Sample(request).nodes.empty()) {
        ++with_room;
        break;
      }
  }
  return with_room;
}

std::vector<agent::PlacementTask> MakeTasks(int count) {
  auto cpu1 = std::make_shared<TaskSpec>(), cpu05 = std::make_shared<TaskSpec>();
  cpu1->reservations = {1'000, 1LL << 30, {}};
  cpu05->reservations = {500, 512LL << 20, {}};
  std::vector<agent::PlacementTask> tasks(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    agent::PlacementTask& t = tasks[static_cast<size_t>(i)];
    t.id = "t" + std::to_string(i);
    t.spec = i % 2 == 0 ? cpu1 : cpu05;
    if (i % 20 == 0) {  // 5% for edge nodes: 5,000 of their ~5,250 eligible slots
      t.spec = cpu05;
      t.edge.target = agent::GeoPoint{52'510'000, 13'410'000};
      t.edge.max_distance_m = 10'000;
      t.edge.min_battery_percent = 30;
    }
  }
  return tasks;
}

int64_t Percentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

Row Run(const Setup& s) {
  std::vector<std::unique_ptr<agent::Agent>> agents;
  std::vector<std::unique_ptr<threephase::InProcessTransport>> transports;
  std::vector<threephase::AgentTransport*> views;
  for (int a = 0; a < s.agents; ++a) {
    agent::AgentOptions options;
    options.id = "agent-" + std::to_string(a);
    options.seed = static_cast<uint64_t>(a + 1);
    agents.push_back(std::make_unique<agent::Agent>(
        options, sim::MakeVelaNodes("a" + std::to_string(a), s.nodes_per_agent)));
    transports.push_back(std::make_unique<threephase::InProcessTransport>(*agents.back()));
    views.push_back(transports.back().get());
  }
  std::vector<agent::PlacementTask> tasks = MakeTasks(s.tasks);
  const std::vector<agent::PlacementTask> probes = tasks;  // `tasks` are moved into the instances
  std::vector<size_t> failed;
  std::mutex mu;
  std::vector<int64_t> phase[4];
  for (auto& p : phase) p.reserve(static_cast<size_t>(s.tasks));
  Row row;
  auto record = [&](const TaskOutcome& o) {
    std::lock_guard lock(mu);
    if (!o.bound) {
      failed.push_back(std::stoul(o.task_id.substr(1)));
      ++row.failure_reasons[(std::stoi(o.task_id.substr(1)) % 20 == 0 ? "edge task: " : "task: ") +
                            o.reason];
      return;
    }
    phase[0].push_back(o.sampling_ns);
    phase[1].push_back(o.decision_ns);
    phase[2].push_back(o.commit_ns);
    phase[3].push_back(o.end_to_end_ns);
  };
  std::vector<std::unique_ptr<SchedulerInstance>> instances;
  for (int i = 0; i < s.instances; ++i) {
    threephase::SchedulerOptions options;
    options.commit_candidates = s.m;
    options.scoring = s.scoring;
    options.seed = static_cast<uint64_t>(1000 + i);
    if (s.samplers > 0) options.samplers = s.samplers;
    if (s.deciders > 0) options.decision_pipelines = s.deciders;
    instances.push_back(std::make_unique<SchedulerInstance>(views, options, record));
  }
  const auto start = std::chrono::steady_clock::now();
  for (auto& instance : instances) instance->Start();
  for (size_t t = 0; t < tasks.size(); ++t)
    instances[t % instances.size()]->Submit(std::move(tasks[t]));
  for (auto& instance : instances)
    if (!instance->WaitIdle(std::chrono::minutes(10))) std::fprintf(stderr, "timed out\n");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto& instance : instances) instance->Stop();
  for (auto& instance : instances) {
    row.reschedules += instance->counters().reschedules.load();
    row.conflicts += instance->counters().conflicts.load();
    row.conflicted_commits += instance->counters().conflicted_commits.load();
    row.bound += instance->counters().bound.load();
    row.failed += instance->counters().failed.load();
    row.widened += instance->counters().widened.load();
  }
  row.failed_with_room = FailedWithRoom(agents, probes, failed);
  row.tasks_per_s = static_cast<double>(row.bound) / seconds;
  for (int p = 0; p < 4; ++p) {
    row.p50[p] = Percentile(phase[p], 0.50);
    row.p99[p] = Percentile(phase[p], 0.99);
  }
  for (const auto& a : agents)
    for (uint32_t n = 0; n < a->nodes().size(); ++n)
      row.overcommitted += a->nodes().Overcommitted(n);
  return row;
}

constexpr char kUsage[] =
    "usage: threephase_bench [--tasks N] [--quick] [--only-small] [--instances N] [--m M]\n"
    "                        [--scoring least|most] [--samplers N] [--deciders N]\n";

struct Flags {
  int tasks = 100'000, only_instances = 0, only_m = 0, samplers = 0, deciders = 0;
  bool quick = false, only_small = false;
  std::string only_scoring;
};

// Returns 0 to go on, or the exit code.
int ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return std::fputs(kUsage, stdout), -1;
    if (arg == "--quick" || arg == "--only-small") {
      (arg == "--quick" ? f->quick : f->only_small) = true;
      continue;
    }
    if (i + 1 >= argc)
      return std::fprintf(stderr, "%s'%s' needs a value\n", kUsage, arg.c_str()), 2;
    const char* value = argv[++i];
    if (arg == "--scoring" && (std::string(value) == "least" || std::string(value) == "most")) {
      f->only_scoring = value;
      continue;
    }
    int* target = arg == "--tasks"       ? &f->tasks
                  : arg == "--instances" ? &f->only_instances
                  : arg == "--m"         ? &f->only_m
                  : arg == "--samplers"  ? &f->samplers
                  : arg == "--deciders"  ? &f->deciders
                                         : nullptr;
    if (target == nullptr || (*target = ParsePositiveInt(value, 100'000'000)) < 0)
      return std::fprintf(stderr, "%sbad argument '%s %s'\n", kUsage, arg.c_str(), value), 2;
  }
  return 0;
}

void PrintHeader() {
  std::printf("%-7s %-5s %-4s %-2s %8s | %-15s %-15s %-15s %-17s | %7s %10s %10s %6s %4s\n",
              "nodes", "score", "inst", "m", "tasks/s", "sample p50/p99", "decide p50/p99",
              "commit p50/p99", "e2e p50/p99 ms", "resched", "cand.confl", "MB.confl", "failed",
              "over");
}

void PrintRow(const Setup& s, const Row& r) {
  auto per_task = [&](uint64_t n) {
    return r.bound ? static_cast<double>(n) / static_cast<double>(r.bound) : 0.0;
  };
  std::printf(
      "%-7d %-5s %-4d %-2zu %8.0f | %6.0f / %-6.0f %6.0f / %-6.0f %6.0f / %-6.0f %7.0f / %-7.0f | "
      "%7llu %10.4f %10.4f %6llu %4d\n",
      s.agents * s.nodes_per_agent,
      s.scoring == agent::ResourceScoring::kLeastAllocated ? "least" : "most", s.instances, s.m,
      r.tasks_per_s, r.p50[0] / 1e3, r.p99[0] / 1e3, r.p50[1] / 1e3, r.p99[1] / 1e3, r.p50[2] / 1e3,
      r.p99[2] / 1e3, r.p50[3] / 1e6, r.p99[3] / 1e6,
      static_cast<unsigned long long>(r.reschedules), per_task(r.conflicts),
      per_task(r.conflicted_commits), static_cast<unsigned long long>(r.failed), r.overcommitted);
  for (const auto& [reason, count] : r.failure_reasons)
    std::printf("    %d failed, %s\n", count, reason.c_str());
  std::printf("    failed while a node had room: %d; attempts widened to every agent: %llu\n",
              r.failed_with_room, static_cast<unsigned long long>(r.widened));
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  Flags f;
  if (const int code = ParseFlags(argc, argv, &f); code != 0) return code < 0 ? 0 : code;
  std::vector<int> node_counts = {2'000, 10'000};
  if (f.only_small) node_counts = {2'000};
  int agents = 10;
  if (f.quick) agents = 2, node_counts = {100}, f.tasks = std::min(f.tasks, 1'000);
  PrintHeader();
  int failures = 0;
  for (int per_agent : node_counts)
    for (auto scoring :
         {agent::ResourceScoring::kLeastAllocated, agent::ResourceScoring::kMostAllocated})
      for (int instances : {1, 2, 4})
        for (size_t m : {size_t{3}, size_t{1}}) {
          const bool least = scoring == agent::ResourceScoring::kLeastAllocated;
          if ((f.only_instances > 0 && instances != f.only_instances) ||
              (f.only_m > 0 && m != static_cast<size_t>(f.only_m)) ||
              (!f.only_scoring.empty() && (f.only_scoring == "least") != least))
            continue;
          const Setup setup{agents, per_agent, f.tasks,    instances,
                            m,      scoring,   f.samplers, f.deciders};
          const Row row = Run(setup);
          PrintRow(setup, row);
          failures += row.overcommitted > 0 || row.failed_with_room > 0;
        }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) { return berth::bench::Main(argc, argv); }
