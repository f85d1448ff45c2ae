// session_bench: what node sessions cost berthd (docs/benchmarks.md,
// "Node sessions"). A berthd process (release build beside this one) on
// loopback; this process joins --nodes nodes as berth-node does, each with
// its own key, CSR and certificate (POST /v1/node/register with the join
// token, from --clients threads), and opens each one's session
// (node::NodeSession: its own TLS connection). Then every session sends a
// heartbeat every --period (default 5 s, berth-node's), spread evenly, for
// --seconds (default 20) while berthd's CPU time and RSS are read from
// /proc. Prints the join rate, berthd's CPU as a share of one core and its
// RSS, before and after the sessions. Both processes share the machine's
// cores. With --replicas R, it then creates one service of R replicas (0.1
// CPU each) and measures, for each task, the time from the create request
// to the receipt of its assignment on its node's session (an upper bound
// of commit-to-receipt: it includes the pass that placed it), and the
// time until berthd has accepted every replica's report that it runs:
// each node reports its new tasks running at once (what it received since
// its last report, in one message), from 64 reporter threads. Usage: session_bench [--nodes N]
// [--clients C]
// [--seconds S] [--period-ms P] [--replicas R] [--quick]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "api/api_client.h"
#include "bench_util.h"
#include "node/node_session.h"
#include "process.h"
#include "store/test_dir.h"
#include "tls/certificate.h"

namespace berth::bench {
namespace {

using api::Json;
using Clock = std::chrono::steady_clock;

// berthd's CPU seconds (user + system) and resident MiB, from /proc.
struct Usage {
  double cpu_s = 0, rss_mib = 0;
};
Usage UsageOf(pid_t pid) {
  Usage usage;
  const std::string stat = testing_support::ReadProcFile(pid, "stat");
  const size_t close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i == 14) utime = std::stoull(field);
      if (i == 15) stime = std::stoull(field);
    }
    usage.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::istringstream status(testing_support::ReadProcFile(pid, "status"));
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmRSS:")) usage.rss_mib = std::stod(line.substr(6)) / 1024;
  return usage;
}

// berthd's CPU over `seconds` as a share of one core.
double CpuShare(pid_t pid, int seconds) {
  const Usage before = UsageOf(pid);
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));  // the measured interval
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  return (UsageOf(pid).cpu_s - before.cpu_s) / wall;
}

// What the nodes' sessions received during the push phase: receipt times
// of each task's assignment (from `start`), and the batches still to be
// reported running, for the reporter threads.
struct Pushes {
  std::mutex mu;
  std::condition_variable ready;
  Clock::time_point start;
  bool measuring = false, stopping = false;
  std::vector<double> receipt_ms;
  // Running reports not yet sent, by session, in the order they came: a
  // node's reports of several pushes go in one message, as berth-node's do.
  std::unordered_map<size_t, Json> to_report;
  std::deque<size_t> report_order;
  std::unordered_set<std::string> seen;  // tasks received
  int64_t accepted = 0;                  // running reports berthd accepted
  std::condition_variable accepted_more;

  void Received(size_t session, const Json& batch) {
    if (!batch.is_object() || !batch.contains("tasks") || !batch["tasks"].is_array()) return;
    Json reports = Json::array();
    std::lock_guard lock(mu);
    if (!measuring) return;
    // A task's first assignment only: later pushes repeat it as its record
    // changes (its own report).
    for (const Json& task : batch["tasks"])
      if (task.value("desired_state", "") == "running" &&
          seen.insert(task.value("task", "")).second)
        reports.push_back({{"task", task.value("task", "")}, {"state", "running"}});
    if (reports.empty()) return;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    receipt_ms.insert(receipt_ms.end(), reports.size(), ms);
    auto [waiting, added] = to_report.try_emplace(session, Json::array());
    for (Json& report : reports) waiting->second.push_back(std::move(report));
    if (!added) return;
    report_order.push_back(session);
    ready.notify_one();
  }
};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

// Creates a service of `replicas` and prints the push and running times.
// Nodes report on their own: enough reporter threads that the bench's
// round trips do not queue the reports of 10,000 nodes behind each other.
constexpr int kReporters = 64;

void Push(api::ApiClient& admin, int replicas,
          std::vector<std::unique_ptr<node::NodeSession>>& sessions, Pushes& pushes) {
  std::vector<std::thread> reporters;
  for (int c = 0; c < kReporters; ++c)
    reporters.emplace_back([&] {
      std::unique_lock lock(pushes.mu);
      while (true) {
        pushes.ready.wait(lock, [&] { return pushes.stopping || !pushes.report_order.empty(); });
        if (pushes.report_order.empty()) return;
        const size_t session = pushes.report_order.front();
        pushes.report_order.pop_front();
        auto waiting = pushes.to_report.extract(session);
        const Json body = {{"tasks", std::move(waiting.mapped())}};
        lock.unlock();
        Result<Json> answer = sessions[session]
                                  ? sessions[session]->Report(body, std::chrono::seconds(10))
                                  : Result<Json>(Status::Unavailable("no session"));
        lock.lock();
        if (answer.ok()) pushes.accepted += answer->value("accepted", int64_t{0});
        pushes.accepted_more.notify_all();
      }
    });
  {
    std::lock_guard lock(pushes.mu);
    pushes.start = Clock::now();
    pushes.measuring = true;
  }
  Result<Json> created =
      admin.Call("POST", "/v1/services",
                 Json{{"id", "push"},
                      {"replicas", replicas},
                      {"task", {{"command", "/bin/true"}, {"resources", {{"cpu", "100m"}}}}}});
  const double ack_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - pushes.start).count();
  double running_ms = -1;
  {
    std::unique_lock lock(pushes.mu);
    if (created.ok() && pushes.accepted_more.wait_for(lock, std::chrono::seconds(60),
                                                      [&] { return pushes.accepted >= replicas; }))
      running_ms = std::chrono::duration<double, std::milli>(Clock::now() - pushes.start).count();
  }
  std::vector<double> receipts;
  {
    std::lock_guard lock(pushes.mu);
    pushes.measuring = false;
    pushes.stopping = true;
    receipts = pushes.receipt_ms;
  }
  pushes.ready.notify_all();
  for (std::thread& t : reporters) t.join();
  if (!created.ok()) {
    std::printf("push: the service was refused: %s\n", created.status().message().c_str());
    return;
  }
  std::printf(
      "push of %d replicas: create acknowledged in %.0f ms; assignments received %zu, from the "
      "create: p50 %.0f ms, p99 %.0f ms, last %.0f ms; every replica running after %.0f ms%s\n",
      replicas, ack_ms, receipts.size(), Percentile(receipts, 0.5), Percentile(receipts, 0.99),
      Percentile(receipts, 1.0), running_ms, running_ms < 0 ? " (not within 60 s)" : "");
}

int Run(int nodes, int clients, int seconds, int period_ms, int replicas) {
  store::TestDir dir;
  const std::string data = dir.path() + "/berthd";
  // Every session comes from 127.0.0.1: no limit per address.
  testing_support::Process berthd({BERTHD_BINARY, "--data-dir", data, "--port", "0",
                                   "--max-sessions-per-address", "0"});
  const std::string port =
      testing_support::PortInLine(berthd.WaitForLine("listening on", std::chrono::seconds(60)));
  const std::string sessions_line = berthd.WaitForLine("node sessions", std::chrono::seconds(60));
  const std::string session_port = sessions_line.find("port ") == std::string::npos
                                       ? ""
                                       : sessions_line.substr(sessions_line.find("port ") + 5);
  const std::string server = "https://127.0.0.1:" + port;
  tls::Credentials trust = api::TrustIn(data);
  trust.cert_pem = trust.key_pem = "";
  api::ApiClient admin(server, testing_support::FirstLine(data + "/token"), 30, trust);
  Result<Json> token = admin.Call("GET", "/v1/tokens/node");
  if (port.empty() || session_port.empty() || !token.ok()) {
    std::fprintf(stderr, "session_bench: berthd did not start\n");
    return 1;
  }
  const pid_t pid = berthd.pid();
  const Usage idle = UsageOf(pid);
  const double idle_cpu = CpuShare(pid, 2);

  std::vector<std::unique_ptr<node::NodeSession>> sessions(static_cast<size_t>(nodes));
  Pushes pushes;
  std::atomic<int> next{0}, failed{0};
  std::atomic<int64_t> register_us{0}, open_us{0};  // summed over the joining threads
  const Usage before_join = UsageOf(pid);
  const auto join_start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&] {
      api::ApiClient client(server, (*token)["token"], 30, trust);
      for (int i; (i = next++) < nodes;) {
        const std::string id = "n" + std::to_string(i);
        const auto t0 = Clock::now();
        Result<tls::KeyAndCsr> csr = tls::NewKeyAndCsr(id);
        Result<Json> joined =
            csr.ok() ? client.Call("POST", "/v1/node/register",
                                   Json{{"hostname", id},
                                        {"machine", "bench-" + id},
                                        {"resources", {{"cpu", "8000m"}, {"memory", 1 << 30}}},
                                        {"csr", csr->csr_pem}})
                     : Result<Json>(csr.status());
        const auto t1 = Clock::now();
        register_us += std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
        if (!joined.ok()) {
          if (failed++ == 0) std::fprintf(stderr, "join: %s\n", joined.status().message().c_str());
          continue;
        }
        node::NodeSessionOptions o;
        o.target = "127.0.0.1:" + session_port;
        o.tls = {(*joined)["certificate"], csr->key_pem, (*joined)["ca"]};
        o.credential = (*joined)["credential"];
        o.on_assignments = [&pushes, i](Json batch) {
          pushes.Received(static_cast<size_t>(i), batch);
        };
        Result<std::unique_ptr<node::NodeSession>> opened = node::NodeSession::Open(std::move(o));
        open_us += std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t1).count();
        if (!opened.ok()) {
          if (failed++ == 0)
            std::fprintf(stderr, "session: %s\n", opened.status().message().c_str());
          continue;
        }
        sessions[static_cast<size_t>(i)] = std::move(*opened);
      }
    });
  for (std::thread& t : threads) t.join();
  const double join_s = std::chrono::duration<double>(Clock::now() - join_start).count();
  const double join_cpu_ms = (UsageOf(pid).cpu_s - before_join.cpu_s) * 1000 / nodes;

  std::printf("holding %d sessions for %d s\n", nodes, seconds);
  std::fflush(stdout);
  std::atomic<bool> stop{false};
  std::atomic<int64_t> sent{0};
  // One heartbeat per session per period, spread evenly over it, from
  // --clients threads (session i on thread i % clients): a session's write
  // waits for gRPC to take it, and one thread cannot keep 4,000 a second.
  std::vector<std::thread> beats;
  for (int c = 0; c < clients; ++c)
    beats.emplace_back([&, c] {
      const int mine = (nodes - c + clients - 1) / clients;
      const auto gap = std::chrono::microseconds(int64_t{period_ms} * 1000 / std::max(1, mine));
      auto due = Clock::now() + gap * c / clients;
      while (!stop)
        for (size_t i = static_cast<size_t>(c); i < sessions.size() && !stop; i += clients) {
          if (sessions[i] && sessions[i]->Heartbeat().ok()) ++sent;
          std::this_thread::sleep_until(due += gap);  // the heartbeat schedule itself
        }
    });
  const int64_t sent_before = sent;
  const double held_cpu = CpuShare(pid, seconds);
  const double beats_per_s = static_cast<double>(sent - sent_before) / seconds;
  const Usage held = UsageOf(pid);
  // Heartbeats go on meanwhile: without them every node would go down.
  if (replicas > 0) Push(admin, replicas, sessions, pushes);
  stop = true;
  for (std::thread& t : beats) t.join();
  int open = 0;
  for (auto& session : sessions) open += session != nullptr && !session->ended();
  std::printf(
      "sessions %d (open at the end %d, failed %d): joined in %.2f s = %.0f nodes/s "
      "(%d clients; per node: key, CSR and register %.1f ms, session open %.1f ms; berthd CPU "
      "%.2f ms)\n"
      "berthd idle: CPU %.1f%% of a core, RSS %.0f MiB\n"
      "berthd with the sessions, heartbeat every %d ms (%.0f heartbeats/s sent): CPU %.1f%% of "
      "a core, RSS %.0f MiB (%.0f MiB and %.1f%% of a core per 10,000 sessions)\n",
      nodes, open, failed.load(), join_s, nodes / join_s, clients,
      static_cast<double>(register_us) / 1000 / nodes, static_cast<double>(open_us) / 1000 / nodes,
      join_cpu_ms, idle_cpu * 100, idle.rss_mib, period_ms, beats_per_s, held_cpu * 100,
      held.rss_mib, (held.rss_mib - idle.rss_mib) * 10000 / nodes,
      (held_cpu - idle_cpu) * 100 * 10000 / nodes);
  sessions.clear();
  return open == nodes ? 0 : 1;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  int nodes = 10000, clients = 8, seconds = 20, period_ms = 5000, replicas = 0;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--quick") == 0) {
      nodes = 50;
      seconds = 1;
    } else if (std::strcmp(argv[i], "--nodes") == 0 && has_value) {
      nodes = berth::bench::ParsePositiveInt(argv[++i], 1'000'000);
    } else if (std::strcmp(argv[i], "--clients") == 0 && has_value) {
      clients = berth::bench::ParsePositiveInt(argv[++i], 256);
    } else if (std::strcmp(argv[i], "--seconds") == 0 && has_value) {
      seconds = berth::bench::ParsePositiveInt(argv[++i], 3600);
    } else if (std::strcmp(argv[i], "--replicas") == 0 && has_value) {
      replicas = berth::bench::ParsePositiveInt(argv[++i], 10'000'000);
    } else if (std::strcmp(argv[i], "--period-ms") == 0 && has_value) {
      period_ms = berth::bench::ParsePositiveInt(argv[++i], 600'000);
    } else {
      std::fprintf(stderr,
                   "usage: session_bench [--nodes N] [--clients C] [--seconds S] "
                   "[--period-ms P] [--replicas R] [--quick]\n");
      return 2;
    }
  }
  if (nodes < 0 || clients < 0 || seconds < 0 || period_ms < 0 || replicas < 0) {
    std::fprintf(stderr, "session_bench: each value must be a positive integer\n");
    return 2;
  }
  return berth::bench::Run(nodes, clients, seconds, period_ms, replicas);
}
