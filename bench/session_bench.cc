// session_bench: what node sessions cost berthd (docs/benchmarks.md,
// "Node sessions"). A berthd process (release build beside this one) on
// loopback; this process joins --nodes nodes as berth-node does, each with
// its own key, CSR and certificate (POST /v1/node/register with the join
// token, from --clients threads), and opens each one's session: its own
// TLS connection and stream, on gRPC's callback API (no thread per
// session, so that one process holds 20,000 of them beside berthd). A
// node's join ends when its session brought its first assignments; the
// join rate is nodes over the time until every session did. Then every
// session sends a heartbeat every --period (default 5 s, berth-node's),
// spread evenly, one in --timed-every of them asking for an answer to time
// (default: one in 30 s, as berth-node; 0: none, as before berth-node timed
// them), for --seconds (default 20) while berthd's CPU time and RSS
// are read from /proc. Prints the join rate, berthd's CPU as a share of
// one core and its RSS, before and after the sessions. Both processes
// share the machine's cores. With --replicas R, it then creates one
// service of R replicas (0.1 CPU each) and measures, for each task, the
// time from the create request to the receipt of its assignment on its
// node's session (an upper bound of commit-to-receipt: it includes the
// pass that placed it), and the time until berthd has accepted every
// replica's report that it runs: each node reports its new tasks running
// at once, on its stream, what came while a write was in flight going in
// one message (as berth-node's). With --trickle N, it creates N services
// of one replica, --trickle-rate a second (default 50), and measures the
// same for each: the push of one commit while the sessions are held.
// Usage: session_bench [--nodes N] [--clients C] [--seconds S]
// [--period-ms P] [--timed-every K] [--replicas R] [--trickle N [--trickle-rate R]] [--quick]
#include <grpcpp/grpcpp.h>

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
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/api_client.h"
#include "bench_util.h"
#include "node/node_session.h"
#include "process.h"
#include "session/grpc_defaults.h"
#include "session/node_session.grpc.pb.h"
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

// This process's CPU seconds (user + system).
double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// berthd's CPU over `seconds` as a share of one core.
double CpuShare(pid_t pid, int seconds) {
  const Usage before = UsageOf(pid);
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));  // the measured interval
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  return (UsageOf(pid).cpu_s - before.cpu_s) / wall;
}

// What the nodes' sessions received during the push phase: each task's
// first assignment, timed from when its service's create was sent, and the
// running reports berthd accepted.
struct Pushes {
  std::mutex mu;
  bool measuring = false;
  std::unordered_map<std::string, Clock::time_point> sent;  // create sent, by service
  std::vector<double> receipt_ms;
  std::unordered_set<std::string> seen;  // tasks received
  int64_t accepted = 0;                  // running reports berthd accepted
  int64_t base = 0;                      // `accepted` at the phase's start
  std::condition_variable accepted_more;

  // Starts a phase: receipts and reports counted from here.
  void Begin() {
    std::lock_guard lock(mu);
    measuring = true;
    receipt_ms.clear();
    base = accepted;
  }
  void Sending(const std::string& service) {
    std::lock_guard lock(mu);
    sent[service] = Clock::now();
  }
  // The running reports of the tasks first assigned in `batch`.
  Json Received(const Json& batch) {
    Json reports = Json::array();
    if (!batch.is_object() || !batch.contains("tasks") || !batch["tasks"].is_array())
      return reports;
    const auto now = Clock::now();
    std::lock_guard lock(mu);
    if (!measuring) return reports;
    // A task's first assignment only: later pushes repeat it as its record
    // changes (its own report).
    for (const Json& task : batch["tasks"]) {
      const std::string id = task.value("task", "");
      const auto service = sent.find(id.substr(0, id.find('.')));
      if (task.value("desired_state", "") != "running" || service == sent.end() ||
          !seen.insert(id).second)
        continue;
      reports.push_back({{"task", id}, {"state", "running"}});
      receipt_ms.push_back(
          std::chrono::duration<double, std::milli>(now - service->second).count());
    }
    return reports;
  }
  void Accepted(int64_t n) {
    std::lock_guard lock(mu);
    accepted += n;
    accepted_more.notify_all();
  }
  // Waits until `tasks` running reports were accepted, at most a minute.
  // The receipts so far; `waited_ms` -1 when they did not all come.
  std::vector<double> Wait(int64_t tasks, Clock::time_point from, double* waited_ms) {
    std::unique_lock lock(mu);
    *waited_ms = -1;
    if (accepted_more.wait_for(lock, std::chrono::seconds(60),
                               [&] { return accepted - base >= tasks; }))
      *waited_ms = std::chrono::duration<double, std::milli>(Clock::now() - from).count();
    measuring = false;
    return receipt_ms;
  }
};

namespace pb = berth::session::v1;

// One node's session on gRPC's callback API. Writes go one at a time (gRPC
// allows one in flight): a heartbeat waits behind the write in flight, and
// running reports that come meanwhile go together in the next message.
class AsyncSession final : public grpc::ClientBidiReactor<pb::NodeMessage, pb::ManagerMessage> {
 public:
  // `opened(true)` when the first assignments come, or `opened(false)` when
  // the stream ends before: once, on a gRPC thread.
  AsyncSession(Pushes& pushes, std::function<void(bool)> opened)
      : pushes_(pushes), on_open_(std::move(opened)) {}

  // Connects and says hello; returns at once.
  void Start(const std::string& target, const tls::Credentials& tls,
             const std::string& credential) {
    channel_ = grpc::CreateCustomChannel(
        target, grpc::SslCredentials({tls.trust_pem, tls.key_pem, tls.cert_pem}),
        node::SessionChannelArguments(node::NodeSessionOptions{}.max_message_bytes));
    stub_ = pb::NodeSessions::NewStub(channel_);
    context_.AddMetadata("authorization", "Bearer " + credential);
    stub_->async()->Session(&context_, this);
    pb::NodeMessage hello;
    hello.mutable_hello();
    Send(std::move(hello));
    StartRead(&in_);
    AddHold();  // writes may start until the stream ends (ReleaseIfIdle)
    StartCall();
    started_.store(true, std::memory_order_release);
  }
  // Nothing before Start (false): a node heartbeats from its session's start.
  // `timed`: it asks for an answer (seq), as berth-node's timed ones.
  bool Heartbeat(bool timed) {
    if (!started_.load(std::memory_order_acquire)) return false;
    pb::NodeMessage beat;
    beat.mutable_heartbeat();
    if (timed) beat.mutable_heartbeat()->set_seq(++beat_seq_);
    Send(std::move(beat));
    return true;
  }
  // Ends a started stream (no Heartbeat after it); WaitDone waits for gRPC
  // to let go of it.
  void Cancel() {
    if (started_.load(std::memory_order_acquire)) context_.TryCancel();
  }
  void WaitDone() {
    if (!started_.load(std::memory_order_acquire)) return;
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return done_; });
  }
  bool ended() {  // or never started (its join failed)
    if (!started_.load(std::memory_order_acquire)) return true;
    std::lock_guard lock(mu_);
    return done_;
  }
  // Why the stream ended ("" while it is open).
  std::string end() {
    std::lock_guard lock(mu_);
    return end_;
  }

 private:
  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ends: no write starts from now on
      std::unique_lock lock(mu_);
      reading_ = false;
      return ReleaseIfIdle(lock);
    }
    if (in_.kind_case() == pb::ManagerMessage::kAssignments) {
      if (on_open_) std::exchange(on_open_, nullptr)(true);  // the first: the session is open
      Json reports = pushes_.Received(Json::parse(in_.assignments().json(), nullptr, false));
      if (!reports.empty()) {
        std::lock_guard lock(mu_);
        for (Json& r : reports) reports_.push_back(std::move(r));
      }
      Pump();
    } else if (in_.kind_case() == pb::ManagerMessage::kReports) {
      const Json answer = Json::parse(in_.reports().json(), nullptr, false);
      if (answer.is_object()) pushes_.Accepted(answer.value("accepted", int64_t{0}));
    }
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mu_);
    writing_ = false;
    if (reading_) {
      lock.unlock();
      if (ok) Pump();
      return;
    }
    ReleaseIfIdle(lock);
  }
  void OnDone(const grpc::Status& status) override {
    if (on_open_) std::exchange(on_open_, nullptr)(false);  // reads are over: no race
    std::lock_guard lock(mu_);
    end_ = status.error_message();
    done_ = true;
    done_cv_.notify_all();
  }
  // Lets OnDone come (once) when the stream ended and no write is in
  // flight; `lock` holds mu_, and RemoveHold is called without it.
  void ReleaseIfIdle(std::unique_lock<std::mutex>& lock) {
    if (reading_ || writing_ || released_) return;
    released_ = true;
    lock.unlock();
    RemoveHold();
  }
  void Send(pb::NodeMessage message) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(message));
    }
    Pump();
  }
  // Starts the next write when none is in flight; never under mu_ when it
  // calls into gRPC.
  void Pump() {
    std::unique_lock lock(mu_);
    if (writing_ || !reading_) return;
    if (!reports_.empty()) {
      out_.Clear();
      out_.mutable_reports()->set_seq(++seq_);
      out_.mutable_reports()->set_json(
          Json{{"tasks", std::exchange(reports_, Json::array())}}.dump());
    } else if (!queue_.empty()) {
      out_ = std::move(queue_.front());
      queue_.pop_front();
    } else {
      return;
    }
    writing_ = true;
    lock.unlock();
    StartWrite(&out_);
  }

  Pushes& pushes_;
  std::function<void(bool)> on_open_;  // called once: by OnReadDone, or OnDone after it
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::NodeSessions::Stub> stub_;
  grpc::ClientContext context_;
  pb::ManagerMessage in_;
  pb::NodeMessage out_;  // the write in flight
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<pb::NodeMessage> queue_;
  Json reports_ = Json::array();  // running reports not yet sent
  uint64_t seq_ = 0;
  bool writing_ = false, done_ = false, reading_ = true, released_ = false;
  std::string end_;  // the stream's end, from OnDone
  std::atomic<bool> started_{false};
  uint64_t beat_seq_ = 0;  // of the timed heartbeats (the heartbeat thread's)
};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

Json ServiceOf(const std::string& id, int replicas) {
  return Json{{"id", id},
              {"replicas", replicas},
              {"task", {{"command", "/bin/true"}, {"resources", {{"cpu", "100m"}}}}}};
}

// Creates a service of `replicas` and prints the push and running times.
void Push(api::ApiClient& admin, pid_t berthd, int replicas, Pushes& pushes) {
  pushes.Begin();
  const double berthd_before = UsageOf(berthd).cpu_s, bench_before = OwnCpuSeconds();
  const auto start = Clock::now();
  pushes.Sending("push");
  Result<Json> created = admin.Call("POST", "/v1/services", ServiceOf("push", replicas));
  const double ack_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  double running_ms = -1;
  const std::vector<double> receipts = pushes.Wait(created.ok() ? replicas : 0, start, &running_ms);
  const double berthd_cpu = UsageOf(berthd).cpu_s - berthd_before;
  const double bench_cpu = OwnCpuSeconds() - bench_before;
  if (!created.ok()) {
    std::printf("push: the service was refused: %s\n", created.status().message().c_str());
    return;
  }
  std::printf(
      "push of %d replicas: create acknowledged in %.0f ms; assignments received %zu, from the "
      "create: first %.0f ms, p50 %.0f ms, p99 %.0f ms, last %.0f ms; every replica running "
      "after %.0f ms%s; CPU meanwhile: berthd %.2f s, this bench %.2f s\n",
      replicas, ack_ms, receipts.size(), Percentile(receipts, 0), Percentile(receipts, 0.5),
      Percentile(receipts, 0.99), Percentile(receipts, 1.0), running_ms,
      running_ms < 0 ? " (not within 60 s)" : "", berthd_cpu, bench_cpu);
}

// Creates `count` services of one replica, `rate` a second, and prints how
// long each one's task took from its create to its node: the push of one
// commit among the sessions held, as a cluster in use sees it.
void Trickle(api::ApiClient& admin, int count, int rate, Pushes& pushes) {
  pushes.Begin();
  const auto start = Clock::now();
  const auto gap = std::chrono::microseconds(1'000'000 / std::max(1, rate));
  int refused = 0;
  for (int i = 0; i < count; ++i) {
    std::this_thread::sleep_until(start + i * gap);  // the creates' schedule itself
    const std::string id = "trickle" + std::to_string(i);
    pushes.Sending(id);
    if (!admin.Call("POST", "/v1/services", ServiceOf(id, 1)).ok()) ++refused;
  }
  double running_ms = -1;
  const std::vector<double> receipts = pushes.Wait(count - refused, start, &running_ms);
  std::printf(
      "trickle of %d one-replica services at %d/s (%d refused): assignments received %zu, from "
      "each create: p50 %.1f ms, p99 %.1f ms, max %.1f ms%s\n",
      count, rate, refused, receipts.size(), Percentile(receipts, 0.5), Percentile(receipts, 0.99),
      Percentile(receipts, 1.0), running_ms < 0 ? " (not every one running within 60 s)" : "");
}

struct Options {
  int nodes = 10000, clients = 8, seconds = 20, period_ms = 5000;
  int timed_every = -1;                // --timed-every; -1: one in 30 s, as berth-node
  int replicas = 0;                    // --replicas: one service of this many
  int trickle = 0, trickle_rate = 50;  // --trickle N [--trickle-rate R]
};

int Run(const Options& o) {
  const int nodes = o.nodes, clients = o.clients, seconds = o.seconds, period_ms = o.period_ms;
  store::TestDir dir;
  const std::string data = dir.path() + "/berthd";
  // Every session comes from 127.0.0.1: no limit per address.
  testing_support::Process berthd(
      {BERTHD_BINARY, "--data-dir", data, "--port", "0", "--max-sessions-per-address", "0"});
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

  session::UseGrpcDefaults();
  Pushes pushes;
  std::atomic<int> next{0}, failed{0};
  std::atomic<int64_t> register_us{0};  // summed over the joining threads
  std::mutex open_mu;
  std::condition_variable open_cv;
  // At most kOpening sessions open at once, as a fleet joins at the pace
  // the server takes: without a bound the bench started 20,000 TLS
  // handshakes at once, and berthd closed those that waited past its
  // handshake timeout (10 s).
  constexpr int kOpening = 64;
  int opened = 0, opening = 0;
  auto on_open = [&](bool ok) {
    std::lock_guard lock(open_mu);
    --opening;
    if (ok)
      ++opened;
    else
      ++failed;
    open_cv.notify_all();
  };
  // Made before the joins, started by them: the heartbeats begin with each
  // session, as berth-node's do, and not after the last join.
  std::vector<std::unique_ptr<AsyncSession>> sessions;
  for (int i = 0; i < nodes; ++i)
    sessions.push_back(std::make_unique<AsyncSession>(pushes, on_open));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> sent{0};
  // One heartbeat per session per period, spread evenly over it: a
  // heartbeat is queued on its stream, so one thread keeps the schedule.
  const int timed_every = o.timed_every >= 0 ? o.timed_every : std::max(1, 30'000 / period_ms);
  std::thread beats([&] {
    const auto gap = std::chrono::microseconds(int64_t{period_ms} * 1000 / std::max(1, nodes));
    auto due = Clock::now();
    for (int64_t round = 0; !stop; ++round) {
      const bool timed = timed_every > 0 && round % timed_every == 0;
      for (size_t i = 0; i < sessions.size() && !stop; ++i) {
        if (sessions[i]->Heartbeat(timed)) ++sent;
        std::this_thread::sleep_until(due += gap);  // the heartbeat schedule itself
      }
    }
  });
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
        register_us +=
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
        if (!joined.ok()) {
          if (failed++ == 0) std::fprintf(stderr, "join: %s\n", joined.status().message().c_str());
          continue;
        }
        {
          std::unique_lock lock(open_mu);
          open_cv.wait(lock, [&] { return opening < kOpening; });
          ++opening;
        }
        sessions[static_cast<size_t>(i)]->Start(
            "127.0.0.1:" + session_port, {(*joined)["certificate"], csr->key_pem, (*joined)["ca"]},
            (*joined)["credential"]);
      }
    });
  for (std::thread& t : threads) t.join();
  {
    std::unique_lock lock(open_mu);
    open_cv.wait_for(lock, std::chrono::seconds(60), [&] { return opened + failed >= nodes; });
  }
  const double join_s = std::chrono::duration<double>(Clock::now() - join_start).count();
  const double join_cpu_ms = (UsageOf(pid).cpu_s - before_join.cpu_s) * 1000 / nodes;

  std::printf("holding %d sessions for %d s\n", nodes, seconds);
  std::fflush(stdout);
  const int64_t sent_before = sent;
  const double held_cpu = CpuShare(pid, seconds);
  const double beats_per_s = static_cast<double>(sent - sent_before) / seconds;
  const Usage held = UsageOf(pid);
  // Heartbeats go on meanwhile: without them every node would go down.
  if (o.replicas > 0) Push(admin, pid, o.replicas, pushes);
  if (o.trickle > 0) Trickle(admin, o.trickle, o.trickle_rate, pushes);
  stop = true;
  beats.join();
  int open = 0;
  std::string ended_why;
  for (auto& session : sessions) {
    open += !session->ended();
    if (session->ended() && ended_why.empty()) ended_why = session->end();
  }
  if (!ended_why.empty()) std::printf("a session ended: %s\n", ended_why.c_str());
  std::printf(
      "sessions %d (with their first assignments %d, open at the end %d, failed %d): joined in "
      "%.2f s = %.0f nodes/s "
      "(%d clients; per node: key, CSR and register %.1f ms, then the session opens on its "
      "own; berthd CPU %.2f ms)\n"
      "berthd idle: CPU %.1f%% of a core, RSS %.0f MiB\n"
      "berthd with the sessions, heartbeat every %d ms, one in %d timed (%.0f heartbeats/s sent): "
      "CPU %.1f%% of "
      "a core, RSS %.0f MiB (%.0f MiB and %.1f%% of a core per 10,000 sessions)\n",
      nodes, opened, open, failed.load(), join_s, nodes / join_s, clients,
      static_cast<double>(register_us) / 1000 / nodes, join_cpu_ms, idle_cpu * 100, idle.rss_mib,
      period_ms, timed_every, beats_per_s, held_cpu * 100, held.rss_mib,
      (held.rss_mib - idle.rss_mib) * 10000 / nodes, (held_cpu - idle_cpu) * 100 * 10000 / nodes);
  for (auto& session : sessions) session->Cancel();
  for (auto& session : sessions) session->WaitDone();
  sessions.clear();
  return open == nodes ? 0 : 1;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  using berth::bench::ParsePositiveInt;
  berth::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--quick") == 0) {
      o.nodes = 50;
      o.seconds = 1;
    } else if (std::strcmp(argv[i], "--nodes") == 0 && has_value) {
      o.nodes = ParsePositiveInt(argv[++i], 1'000'000);
    } else if (std::strcmp(argv[i], "--clients") == 0 && has_value) {
      o.clients = ParsePositiveInt(argv[++i], 256);
    } else if (std::strcmp(argv[i], "--seconds") == 0 && has_value) {
      o.seconds = ParsePositiveInt(argv[++i], 3600);
    } else if (std::strcmp(argv[i], "--replicas") == 0 && has_value) {
      o.replicas = ParsePositiveInt(argv[++i], 10'000'000);
    } else if (std::strcmp(argv[i], "--trickle") == 0 && has_value) {
      o.trickle = ParsePositiveInt(argv[++i], 1'000'000);
    } else if (std::strcmp(argv[i], "--trickle-rate") == 0 && has_value) {
      o.trickle_rate = ParsePositiveInt(argv[++i], 100'000);
    } else if (std::strcmp(argv[i], "--period-ms") == 0 && has_value) {
      o.period_ms = ParsePositiveInt(argv[++i], 600'000);
    } else if (std::strcmp(argv[i], "--timed-every") == 0 && has_value) {
      const char* value = argv[++i];
      o.timed_every = std::strcmp(value, "0") == 0 ? 0 : ParsePositiveInt(value, 1'000'000);
      if (o.timed_every < 0) o.timed_every = -2;  // refused below
    } else {
      std::fprintf(
          stderr,
          "usage: session_bench [--nodes N] [--clients C] [--seconds S] "
          "[--period-ms P] [--timed-every K] [--replicas R] [--trickle N [--trickle-rate R]] "
          "[--quick]\n");
      return 2;
    }
  }
  if (o.nodes < 0 || o.clients < 0 || o.seconds < 0 || o.period_ms < 0 || o.replicas < 0 ||
      o.timed_every < -1 || o.trickle < 0 || o.trickle_rate <= 0) {
    std::fprintf(stderr, "session_bench: each value must be a positive integer\n");
    return 2;
  }
  return berth::bench::Run(o);
}
