// High availability end to end (docs/ha.md): a real 3-member etcd on
// loopback ports and two berthd replicas on it, under a bounded client load
// (a client thread creating services through every replica, reading the
// cluster after each), then a failure, then the history checker
// (tests/history) over everything the clients were told and saw, in every
// scenario.
//
// Every process is started here and stopped by its pid (Process and
// EtcdTestCluster kill and reap what still runs).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "api/api_client.h"
#include "api/http_server.h"
#include "history/history.h"
#include "history/recorder.h"
#include "process.h"
#include "store/etcd_store.h"
#include "store/etcd_test_cluster.h"
#include "store/test_dir.h"
#include "tls/context.h"

namespace berth {
namespace {

using api::Json;
using testing_support::Process;

constexpr int kNodes = 4;
constexpr int kNodeMilliCpu = 4000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A counter of a replica's /metrics (-1 if unreadable).
double Metric(const std::string& server, const std::string& token, const std::string& trust,
              const std::string& name) {
  httplib::Client http("https://" + server);
  http.set_ca_cert_store(tls::NewTrustStore(trust));
  http.enable_server_certificate_verification(true);
  http.set_bearer_token_auth(token);
  httplib::Result res = http.Get("/metrics");
  if (!res || res->status != 200) return -1;
  return api::MetricSample(res->body, name).value_or(-1);
}

std::string Dump(const Result<Json>& answer) {
  return answer.ok() ? answer->dump() : answer.status().message();
}

class HaTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.ok()) << etcd_.error();
    for (int i = 0; i < kReplicas; ++i) ASSERT_TRUE(StartReplica(i)) << "replica " << i;
    leader_ = WaitForLeader(-1);
    ASSERT_GE(leader_, 0) << "no replica leads";
    api::ApiClient api = Client(leader_);
    for (int n = 0; n < kNodes; ++n)
      ASSERT_TRUE(api.Call("POST", "/v1/nodes",
                           Json{{"id", "n" + std::to_string(n)},
                                {"resources", {{"cpu", kNodeMilliCpu / 1000}}}})
                      .ok());
  }

  bool StartReplica(int i) {
    const std::string data = dir_.path() + "/r" + std::to_string(i);
    replicas_[i].process = std::make_unique<Process>(
        std::vector<std::string>{BERTHD_BINARY, "--data-dir", data, "--port", "0", "--threads", "8",
                                 "--store", "etcd://" + etcd_.EndpointList(),
                                 "--ca-unlock-key-file", dir_.path() + "/ca-unlock-key",
                                 "--leader-ttl", std::to_string(ttl_seconds_) + "s",
                                 "--heartbeat-period", "200ms", "--max-body-bytes", "8388608"},
        Process::Stderr::kMerge);
    const std::string line =
        replicas_[i].process->WaitForLine("listening on", std::chrono::seconds(20));
    if (line.empty()) return false;
    replicas_[i].server = "127.0.0.1:" + testing_support::PortInLine(line);
    trust_ = api::TrustIn(data).trust_pem;  // every replica's: the one root in etcd
    token_ = testing_support::FirstLine(data + "/token");
    replicas_[i].usable = true;
    return !token_.empty();
  }

  api::ApiClient Client(int i) {
    return api::ApiClient("https://" + replicas_[i].server, token_, 30, {"", "", trust_});
  }
  // Takes replica `i` out of the load, before a test stops or kills it.
  void Unload(int i) { replicas_[i].usable = false; }

  // The replica (other than `except`) that says it leads, polled within
  // the ttl plus a bound; -1 when none does.
  // With `supervise`, replicas that exited are started again first, as
  // systemd would (docs/ha.md: a replica that loses the leadership exits).
  int WaitForLeader(int except, std::chrono::seconds bound = std::chrono::seconds(20),
                    bool supervise = false) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
      for (int i = 0; supervise && i < kReplicas; ++i)
        if (replicas_[i].process != nullptr && !replicas_[i].process->Running()) {
          replicas_[i].usable = false;
          if (!StartReplica(i)) return -1;
        }
      for (int i = 0; i < kReplicas; ++i) {
        if (i == except || replicas_[i].process == nullptr) continue;
        Result<Json> health = Client(i).Call("GET", "/v1/health");
        if (health.ok() && health->value("role", "") == "leader") return i;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll with a bound
    }
    return -1;
  }

  // Whether `service` has `replicas` running tasks, read through replica
  // `i`, within `bound`.
  bool WaitRunning(int i, const std::string& service, size_t replicas,
                   std::chrono::seconds bound = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
      Result<Json> tasks = Client(i).Call("GET", "/v1/tasks?service=" + service + "&state=running");
      if (tasks.ok() && (*tasks)["tasks"].size() == replicas) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll with a bound
    }
    return false;
  }

  // A client thread: creates services of 2 replicas through replicas in
  // turn, reads the cluster after each, until stopped. Its tasks (at most
  // 201 x 2 x 10m = 4 cpu) fit the simulated nodes whatever else runs, and
  // stay off a real berth-node ("hn"), which would have no command to run.
  void StartLoad() {
    load_ = std::thread([this] {
      for (int n = 0; !stop_load_.load(); ++n) {
        const int via = n % kReplicas;
        if (!replicas_[via].usable) continue;
        api::ApiClient api = Client(via);
        const std::string client = "client@r" + std::to_string(via);
        history::Write write = history::Create(
            api, client, history::ObjectKind::kService,
            Json{{"id", "load" + std::to_string(n)},
                 {"replicas", 2},
                 {"task", {{"resources", {{"cpu", "10m"}}}, {"constraints", {"node.id!=hn"}}}}},
            NowMs());
        Result<history::Snapshot> read = history::ReadCluster(api, client, NowMs());
        std::lock_guard lock(history_mu_);
        history_.writes.push_back(std::move(write));
        if (read.ok()) history_.reads.push_back(std::move(*read));
        if (n >= 200) return;  // bounded load
      }
    });
  }
  void StopLoad() {
    stop_load_ = true;
    if (load_.joinable()) load_.join();
  }

  // Stops the load, waits until every acknowledged service runs, and
  // checks the history with the final state read through `via`.
  void CheckHistory(int via) {
    StopLoad();
    for (const history::Write& w : history_.writes)
      if (w.acknowledged) {
        EXPECT_TRUE(WaitRunning(via, w.id, 2)) << w.id;
      }
    api::ApiClient api = Client(via);
    Result<history::Snapshot> final_state = history::ReadCluster(api, "final", NowMs());
    ASSERT_TRUE(final_state.ok()) << final_state.status().message();
    history_.final_state = std::move(*final_state);
    size_t acknowledged = 0;
    for (const history::Write& w : history_.writes) acknowledged += w.acknowledged;
    EXPECT_GT(acknowledged, 0u);
    for (const std::string& violation : history::Check(history_)) ADD_FAILURE() << violation;
  }

  static constexpr int kReplicas = 2;
  int ttl_seconds_ = 3;  // the replicas' --leader-ttl (berthd's default)
  struct Replica {
    std::unique_ptr<Process> process;  // the test thread's
    std::string server;                // set before the load starts
    std::atomic<bool> usable{false};   // the load may call it
    bool paused = false;
  };
  store::EtcdTestCluster etcd_{3};
  store::TestDir dir_;
  std::array<Replica, kReplicas> replicas_;
  std::string token_, trust_;
  int leader_ = -1;
  std::thread load_;
  std::atomic<bool> stop_load_{false};
  std::mutex history_mu_;
  history::History history_;

  void TearDown() override {
    StopLoad();
    for (Replica& r : replicas_)
      if (r.process != nullptr) {
        if (r.paused) r.process->Signal(SIGCONT);
        r.process->Kill(SIGKILL);
      }
  }
};

// The leader is SIGKILLed: the other replica leads and places within the
// ttl (plus etcd's half-second sweep for expired leases) and a few seconds.
TEST_F(HaTest, LeaderKilledAnotherLeadsAndPlacementResumes) {
  StartLoad();
  ASSERT_TRUE(WaitRunning(leader_, "load0", 2));
  const int other = 1 - leader_;
  Unload(leader_);
  const auto killed = std::chrono::steady_clock::now();
  replicas_[leader_].process->Kill(SIGKILL);
  replicas_[leader_].process.reset();
  ASSERT_TRUE(
      Client(other)
          .Call(
              "POST", "/v1/services",
              Json{{"id", "after"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", "100m"}}}}}})
          .ok());
  ASSERT_TRUE(WaitRunning(other, "after", 3, std::chrono::seconds(30)));
  const auto resumed = std::chrono::steady_clock::now() - killed;
  const auto bound = std::chrono::seconds(ttl_seconds_) + std::chrono::seconds(4);
  EXPECT_LT(resumed, bound)
      << "placement resumed after "
      << std::chrono::duration_cast<std::chrono::milliseconds>(resumed).count() << " ms";
  RecordProperty(
      "failover_ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(resumed).count()));
  EXPECT_EQ(WaitForLeader(-1), other);
  CheckHistory(other);
}

// The events of replica `i` with indexes from `from` through `through`,
// without the time each was recorded (a replica's own), once it has
// recorded `through` (polled with a bound; empty if it never does).
std::vector<Json> EventsThrough(api::ApiClient client, int64_t from, int64_t through) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<Json> events;
    int64_t newest = 0;
    const Status read = client.Stream("/v1/events?follow=false&index=" + std::to_string(from),
                                      [&](const Json& line) {
                                        for (Json e : line.value("events", Json::array())) {
                                          newest = e["index"];
                                          e.erase("time");
                                          if (newest <= through) events.push_back(std::move(e));
                                        }
                                        return true;
                                      });
    if (read.ok() && newest >= through) return events;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll with a bound
  }
  return {};
}

// Every replica records the commits of the one etcd, whichever replica or
// the leader's loop made them: the events of an index range are the same
// on each.
TEST_F(HaTest, EventsAreTheSameOnEveryReplica) {
  const int follower = 1 - leader_;
  Result<Json> health = Client(follower).Call("GET", "/v1/health");
  ASSERT_TRUE(health.ok()) << health.status().message();
  const int64_t from = (*health)["revision"].get<int64_t>() + 1;
  ASSERT_TRUE(
      Client(follower)
          .Call("POST", "/v1/services",
                Json{{"id", "ev"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", "100m"}}}}}})
          .ok());
  ASSERT_TRUE(WaitRunning(leader_, "ev", 3));
  ASSERT_TRUE(Client(follower).Call("POST", "/v1/nodes/n0/drain").ok());
  health = Client(leader_).Call("GET", "/v1/health?wait=settled");
  ASSERT_TRUE(health.ok()) << health.status().message();
  const int64_t through = (*health)["revision"];
  const std::vector<Json> on_leader = EventsThrough(Client(leader_), from, through);
  const std::vector<Json> on_follower = EventsThrough(Client(follower), from, through);
  ASSERT_FALSE(on_leader.empty());
  EXPECT_EQ(on_leader, on_follower);
  std::set<std::string> seen;
  for (const Json& e : on_leader)
    seen.insert(e["topic"].get<std::string>() + " " + e["type"].get<std::string>());
  for (const char* expected : {"service update", "task running", "node drain"})
    EXPECT_TRUE(seen.contains(expected)) << expected;
}

// A job far larger than one etcd transaction (128 writes, 1.5 MiB; each
// task has its own command line), submitted through the follower: stored whole, read whole through
// either replica, its tasks admitted and run by the leader, then killed.
TEST_F(HaTest, AJobOfTwelveThousandTasksIsStoredWholeRunsAndIsKilled) {
  constexpr int kTasks = 12'000;
  Json job = {{"id", "big"},
              {"requestor", "ci"},
              {"task", {{"resources", {{"cpu", "10m"}}}, {"constraints", {"node.id!=hn"}}}},
              {"tasks", Json::array()},
              {"commands", Json::array()}};
  for (int i = 1; i <= kTasks; ++i) {
    const std::string shard = std::to_string(i);
    job["tasks"].push_back({{"name", "integration-shard-" + shard}, {"duration", 600}});
    job["commands"].push_back({"run-tests", "--suite", "integration", "--shard", shard, "--of",
                               std::to_string(kTasks), "--report",
                               "/tmp/report-" + shard + ".xml"});
  }
  ASSERT_GT(job.dump().size(), size_t{3} << 19);
  const int follower = 1 - leader_;
  // A small one first: one transaction, where etcd lists the job's parts
  // after its record.
  ASSERT_TRUE(
      Client(follower)
          .Call("POST", "/v1/jobs",
                Json{{"id", "small"},
                     {"requestor", "ci"},
                     {"task", {{"resources", {{"cpu", "10m"}}}, {"constraints", {"node.id!=hn"}}}},
                     {"tasks", {{{"duration", 0.1}}, {{"duration", 0.1}}}},
                     {"commands", {{"true"}, {"make", "check"}}}})
          .ok());
  const auto small_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto small_state = [&] {
    Result<Json> got = Client(leader_).Call("GET", "/v1/jobs/small");
    return got.ok() ? got->value("state", "") : "";
  };
  while (small_state() != "complete" && std::chrono::steady_clock::now() < small_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll with a bound
  ASSERT_EQ(small_state(), "complete");

  Result<Json> submitted = Client(follower).Call("POST", "/v1/jobs", job);
  ASSERT_TRUE(submitted.ok()) << submitted.status().message();
  EXPECT_EQ((*submitted)["tasks"], kTasks);
  // Every worker (one per node) takes one of its tasks.
  auto states_through = [&](int i) {
    Result<Json> got = Client(i).Call("GET", "/v1/jobs/big");
    return got.ok() ? (*got)["states"] : Json();
  };
  const Json running = {{"new", kTasks - kNodes}, {"running", kNodes}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (states_through(leader_) != running && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll with a bound
  ASSERT_EQ(states_through(leader_), running);
  Result<Json> listed = Client(follower).Call("GET", "/v1/tasks?job=big");
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  ASSERT_EQ((*listed)["tasks"].size(), size_t{kTasks});
  EXPECT_EQ((*listed)["tasks"][kTasks - 1]["name"],
            "integration-shard-9999");  // in id order: big.9999
  Result<Json> one = Client(follower).Call("GET", "/v1/tasks/big.12000");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ((*one)["name"], "integration-shard-12000");
  Result<Json> got = Client(leader_).Call("GET", "/v1/jobs/big");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ((*got)["commands"], job["commands"]);

  ASSERT_TRUE(Client(follower).Call("DELETE", "/v1/jobs/big").ok());
  const Json killed = {{"shutdown", kTasks}};
  const auto stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (states_through(follower) != killed && std::chrono::steady_clock::now() < stop_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll with a bound
  EXPECT_EQ(states_through(follower), killed);
  EXPECT_EQ(Client(leader_).Call("GET", "/v1/jobs/big")->value("state", ""), "killed");
}

// `berth ca rotate` on the leader reaches the follower without a restart:
// within its sync interval (10 s) the follower trusts both roots, and after
// `--finish` only the new one, with its own certificate of the new root.
TEST_F(HaTest, ACaRotationOnTheLeaderReachesTheFollowerWithoutARestart) {
  const int follower = 1 - leader_;
  auto follower_says = [&](const std::string& digest, bool rotating) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      Result<Json> ca = Client(follower).Call("GET", "/v1/ca");
      if (ca.ok() && (*ca)["digest"] == digest && (*ca)["rotating"] == rotating) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll with a bound
    }
    return false;
  };
  Result<Json> rotated = Client(leader_).Call("POST", "/v1/ca/rotate");
  ASSERT_TRUE(rotated.ok()) << rotated.status().message();
  const std::string digest = (*rotated)["digest"];
  trust_ = (*rotated)["cert"];  // both roots, as a client copies ca.pem again
  EXPECT_TRUE(follower_says(digest, true));
  ASSERT_TRUE(Client(leader_).Call("POST", "/v1/ca/rotate?finish=true").ok());
  EXPECT_TRUE(follower_says(digest, false));
  // The follower serves with a certificate of the new root alone.
  Result<Json> after = Client(leader_).Call("GET", "/v1/ca");
  ASSERT_TRUE(after.ok());
  trust_ = (*after)["cert"];
  EXPECT_TRUE(Client(follower).Call("GET", "/v1/health").ok());
}

// A berth-node given both replicas finds the leader (the follower answers
// 503 naming it), and when the leader is killed it heartbeats to the next
// one: the new leader gives it a fresh grace, so its task keeps running
// where it is, and the node refuses nothing newer than what it saw.
TEST_F(HaTest, ABerthNodeFollowsTheLeader) {
  StartLoad();
  const int other = 1 - leader_;
  Result<Json> join = Client(other).Call("GET", "/v1/tokens/node");
  ASSERT_FALSE(join.ok());  // the leader's: the follower names it
  EXPECT_NE(join.status().message().find("the leader is"), std::string::npos)
      << join.status().message();
  join = Client(leader_).Call("GET", "/v1/tokens/node");
  ASSERT_TRUE(join.ok()) << join.status().message();
  const std::string token_file = dir_.path() + "/node-token";
  { std::ofstream(token_file) << (*join)["token"].get<std::string>() << "\n"; }
  ::chmod(token_file.c_str(), 0600);
  const std::string data = dir_.path() + "/node";
  Process node({BERTH_NODE_BINARY, "--join",
                "https://" + replicas_[other].server + ",https://" + replicas_[leader_].server,
                "--token-file", token_file, "--data-dir", data, "--hostname", "hn", "--listen",
                "127.0.0.1:0", "--exec", BERTH_EXEC_BINARY},
               Process::Stderr::kMerge);
  ASSERT_FALSE(node.WaitForLine("joined", std::chrono::seconds(30)).empty());
  ASSERT_TRUE(Client(leader_)
                  .Call("POST", "/v1/services",
                        Json{{"id", "sleeper"},
                             {"replicas", 1},
                             {"task",
                              {{"command", "/bin/sleep"},
                               {"args", {"1000"}},
                               {"constraints", {"node.id==hn"}}}}})
                  .ok());
  ASSERT_TRUE(WaitRunning(leader_, "sleeper", 1));
  const Json before = (*Client(leader_).Call("GET", "/v1/tasks?service=sleeper"))["tasks"][0];
  Unload(leader_);
  replicas_[leader_].process->Kill(SIGKILL);
  replicas_[leader_].process.reset();
  ASSERT_EQ(WaitForLeader(leader_), other);
  // After more heartbeats than the grace lasts (3 x 200 ms), taken by the
  // new leader, the node is ready and its task is the same one.
  bool heartbeating = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!heartbeating && std::chrono::steady_clock::now() < deadline) {
    heartbeating =
        Metric(replicas_[other].server, token_, trust_, "berth_node_heartbeats_total") >= 6;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll with a bound
  }
  ASSERT_TRUE(heartbeating);
  Result<Json> hn = Client(other).Call("GET", "/v1/nodes/hn");
  ASSERT_TRUE(hn.ok());
  EXPECT_EQ(hn->value("state", ""), "ready") << hn->dump();
  const Json after = (*Client(other).Call("GET", "/v1/tasks?service=sleeper"))["tasks"];
  ASSERT_EQ(after.size(), 1u) << after.dump();
  EXPECT_EQ(after[0]["id"], before["id"]);
  EXPECT_EQ(after[0]["state"], "running");
  CheckHistory(other);
  node.Kill(SIGKILL);
  testing_support::KillTasksOf(data);
}

// The leader is SIGSTOPped past its lease: the other leads; the old one,
// continued, commits nothing (its fence fails) and exits, and no task was
// ever bound to two nodes.
TEST_F(HaTest, APausedLeaderCannotCommitWhenItWakes) {
  StartLoad();
  ASSERT_TRUE(WaitRunning(leader_, "load0", 2));
  const int old = leader_;
  Unload(old);
  replicas_[old].paused = true;
  replicas_[old].process->Signal(SIGSTOP);
  const int next = WaitForLeader(old);
  ASSERT_EQ(next, 1 - old);
  ASSERT_TRUE(Client(next)
                  .Call("POST", "/v1/services",
                        Json{{"id", "while-paused"},
                             {"replicas", 4},
                             {"task", {{"resources", {{"cpu", "100m"}}}}}})
                  .ok());
  ASSERT_TRUE(WaitRunning(next, "while-paused", 4));
  replicas_[old].process->Signal(SIGCONT);
  replicas_[old].paused = false;
  const Process::Exit exit = replicas_[old].process->WaitExit(std::chrono::seconds(20));
  replicas_[old].process.reset();
  EXPECT_TRUE(WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 3) << exit.output;
  EXPECT_NE(exit.output.find("lost the leadership"), std::string::npos) << exit.output;
  EXPECT_EQ(WaitForLeader(-1), next);
  CheckHistory(next);
}

// etcd's members fail while berthd runs at its default lease.
class HaEtcdFailureTest : public HaTest {};

// The leader's epoch as the replica behind `api` knows it (0 when
// unreadable or none).
int64_t EpochSeenBy(api::ApiClient api) {
  Result<Json> health = api.Call("GET", "/v1/health");
  if (!health.ok() || !(*health)["leader"].is_object()) return 0;
  return (*health)["leader"].value("epoch", int64_t{0});
}

// etcd's own leader dies, three times over: its members refuse ("no
// leader") for one to two election timeouts until they elect another, and
// the berthd leader, renewing its 3 s lease every 125 ms, rides that out:
// the same replica leads at the same epoch, places what it is given
// meanwhile, and never exits.
TEST_F(HaEtcdFailureTest, EtcdsOwnLeaderDiesAndTheBerthdLeaderStays) {
  StartLoad();
  ASSERT_TRUE(WaitRunning(leader_, "load0", 2));
  const int64_t epoch = EpochSeenBy(Client(leader_));
  ASSERT_GT(epoch, 0);
  for (int round = 0; round < 3; ++round) {
    const int member = etcd_.Leader();
    ASSERT_GE(member, 0) << "etcd has no leader";
    etcd_.Kill(member);
    const std::string id = "etcd-leader-died" + std::to_string(round);
    Result<Json> created = Client(leader_).Call(
        "POST", "/v1/services",
        Json{{"id", id}, {"replicas", 2}, {"task", {{"resources", {{"cpu", "100m"}}}}}});
    ASSERT_TRUE(created.ok())
        << created.status().message() << "\nthe leader's output:\n"
        << replicas_[leader_].process->WaitExit(std::chrono::seconds(1)).output;
    EXPECT_TRUE(WaitRunning(leader_, id, 2));
    ASSERT_TRUE(etcd_.Restart(member)) << etcd_.error();
    ASSERT_TRUE(replicas_[leader_].process->Running())
        << replicas_[leader_].process->WaitExit(std::chrono::seconds(5)).output;
    EXPECT_EQ(EpochSeenBy(Client(leader_)), epoch);
    EXPECT_EQ(EpochSeenBy(Client(1 - leader_)), epoch);
  }
  EXPECT_EQ(WaitForLeader(-1), leader_);
  CheckHistory(leader_);
  const double closest = Metric(replicas_[leader_].server, token_, trust_,
                                "berth_leader_lease_unconfirmed_max_seconds");
  EXPECT_GE(closest, 0.5);  // an election was ridden out: etcd renews nothing for 1 s or more
  RecordProperty("lease_unconfirmed_max_ms", std::to_string(std::llround(closest * 1000)));
}

// One etcd member of three dies: service goes on. Two: writes are refused
// with 503 and etcd's words, nothing is lost, and service returns with them.
TEST_F(HaEtcdFailureTest, EtcdMembersDieAndReturn) {
  StartLoad();
  ASSERT_TRUE(WaitRunning(leader_, "load0", 2));
  etcd_.Kill(2);
  Result<Json> one_down = Client(leader_).Call(
      "POST", "/v1/services",
      Json{{"id", "one-down"}, {"replicas", 2}, {"task", {{"resources", {{"cpu", "100m"}}}}}});
  ASSERT_TRUE(one_down.ok()) << one_down.status().message();
  ASSERT_TRUE(WaitRunning(leader_, "one-down", 2));
  StopLoad();
  etcd_.Kill(1);
  Result<Json> refused = Client(1 - leader_)
                             .Call("POST", "/v1/services",
                                   Json{{"id", "two-down"},
                                        {"replicas", 1},
                                        {"task", {{"resources", {{"cpu", "100m"}}}}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status().message();
  EXPECT_NE(refused.status().message().find("etcd"), std::string::npos)
      << refused.status().message();
  ASSERT_TRUE(etcd_.Restart(1)) << etcd_.error();
  ASSERT_TRUE(etcd_.Restart(2)) << etcd_.error();
  // A leader that could not renew its lease while etcd had no quorum has
  // exited; its supervisor (here: the test) starts it again.
  const int leader = WaitForLeader(-1, std::chrono::seconds(60), true);
  ASSERT_GE(leader, 0);
  ASSERT_TRUE(
      Client(leader)
          .Call("POST", "/v1/services",
                Json{{"id", "back"}, {"replicas", 2}, {"task", {{"resources", {{"cpu", "100m"}}}}}})
          .ok());
  ASSERT_TRUE(WaitRunning(leader, "back", 2, std::chrono::seconds(30)))
      << Dump(Client(leader).Call("GET", "/v1/health")) << " "
      << Dump(Client(leader).Call("GET", "/v1/tasks?service=back"));
  CheckHistory(leader);
}

// A longer lease, so that the leader can be paused while etcd's members
// restart one by one without losing it.
class HaCompactionTest : public HaTest {
 protected:
  HaCompactionTest() { ttl_seconds_ = 20; }
};

// The paused leader's watch breaks (every member restarts), the changes it
// missed are made and etcd compacts them away: continued, it cannot resume
// its watch, lists everything again and places what it missed.
TEST_F(HaCompactionTest, ALeaderWhoseWatchWasCompactedListsAgainAndConverges) {
  StartLoad();
  const int leader = leader_, other = 1 - leader_;
  const Json task = {{"resources", {{"cpu", "100m"}}}};
  ASSERT_TRUE(
      Client(leader)
          .Call("POST", "/v1/services", Json{{"id", "before"}, {"replicas", 2}, {"task", task}})
          .ok());
  ASSERT_TRUE(WaitRunning(leader, "before", 2));
  const double lists = Metric(replicas_[leader].server, token_, trust_, "berth_store_lists_total");
  ASSERT_GE(lists, 1);
  Unload(leader);
  replicas_[leader].paused = true;
  replicas_[leader].process->Signal(SIGSTOP);
  for (int m = 0; m < 3; ++m) {
    etcd_.Kill(m);
    ASSERT_TRUE(etcd_.Restart(m)) << etcd_.error();
  }
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(
        Client(other)
            .Call("POST", "/v1/services",
                  Json{{"id", "missed" + std::to_string(i)}, {"replicas", 2}, {"task", task}})
            .ok());
  store::EtcdStoreOptions options;
  options.client.endpoints = etcd_.Endpoints();
  Result<std::unique_ptr<store::EtcdStore>> etcd = store::EtcdStore::Open(options);
  ASSERT_TRUE(etcd.ok()) << etcd.status().message();
  ASSERT_TRUE((*etcd)->Compact((*etcd)->revision()).ok());
  replicas_[leader].process->Signal(SIGCONT);
  replicas_[leader].paused = false;
  replicas_[leader].usable = true;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(WaitRunning(other, "missed" + std::to_string(i), 2));
  EXPECT_GT(Metric(replicas_[leader].server, token_, trust_, "berth_store_lists_total"), lists);
  EXPECT_EQ(WaitForLeader(-1), leader);
  CheckHistory(other);
}

// berthd on etcd serving mutual TLS only (scripts/ha-local's setup): with
// --etcd-cacert, --etcd-cert and --etcd-key it leads and stores what it is
// told; without a client certificate it exits with the reason.
TEST(HaTlsTest, BerthdCallsEtcdOverMutualTlsWithItsClientCertificate) {
  store::TestDir dir;
  const Timestamp now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  const tls::CertificateAuthority ca = tls::CertificateAuthority::Create("etcd", now).value();
  store::EtcdTestCluster etcd(1, {}, store::WriteEtcdTestTls(ca, dir.path(), "member"));
  ASSERT_TRUE(etcd.ok()) << etcd.error();
  const store::EtcdTestTls client = store::WriteEtcdTestTls(ca, dir.path(), "berthd");
  auto berthd = [&](const std::string& data, std::vector<std::string> tls) {
    std::vector<std::string> argv = {
        BERTHD_BINARY, "--data-dir", dir.path() + "/" + data,        "--port",
        "0",           "--store",    "etcd://" + etcd.EndpointList()};
    argv.insert(argv.end(), tls.begin(), tls.end());
    return std::make_unique<Process>(argv, Process::Stderr::kMerge);
  };
  std::unique_ptr<Process> replica =
      berthd("r0", {"--etcd-cacert", client.ca_file, "--etcd-cert", client.cert_file, "--etcd-key",
                    client.key_file, "--leader-ttl", "3s"});
  const std::string line = replica->WaitForLine("listening on", std::chrono::seconds(20));
  ASSERT_FALSE(line.empty());
  const std::string data = dir.path() + "/r0";
  api::ApiClient api("https://127.0.0.1:" + testing_support::PortInLine(line),
                     testing_support::FirstLine(data + "/token"), 30,
                     {"", "", api::TrustIn(data).trust_pem});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  Result<Json> health = api.Call("GET", "/v1/health");
  while (!(health.ok() && health->value("role", "") == "leader") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a poll with a bound
    health = api.Call("GET", "/v1/health");
  }
  ASSERT_TRUE(health.ok() && health->value("role", "") == "leader")
      << (health.ok() ? health->dump() : health.status().message());
  ASSERT_TRUE(api.Call("POST", "/v1/nodes", Json{{"id", "n1"}, {"resources", {{"cpu", 1}}}}).ok());
  // What berthd stored is in etcd, read with the same client certificate.
  store::EtcdStoreOptions options;
  options.client.endpoints = etcd.Endpoints();
  options.client.ca_file = client.ca_file;
  options.client.cert_file = client.cert_file;
  options.client.key_file = client.key_file;
  Result<std::unique_ptr<store::EtcdStore>> direct = store::EtcdStore::Open(options);
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  EXPECT_TRUE((*direct)->Get("node", "n1")->has_value());

  std::unique_ptr<Process> anonymous = berthd("r1", {"--etcd-cacert", client.ca_file});
  const Process::Exit exit = anonymous->WaitExit(std::chrono::seconds(60));
  EXPECT_NE(exit.status, 0);
  EXPECT_NE(exit.output.find("refused this client's certificate"), std::string::npos)
      << exit.output;
}

// scripts/ha-local as docs/ha.md tells a user to run it: etcd over mutual
// TLS and three replicas come up, the printed leader serves, another
// replica reads what it stored, and SIGTERM stops every process it started.
TEST(HaLocalScript, RunsEtcdOverTlsAndThreeReplicasAndStopsThemAll) {
  if (access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "needs openssl (scripts/setup)";
  store::TestDir dir;
  const std::string ha = dir.path() + "/ha";
  setenv("BERTH_BIN", std::filesystem::path(BERTHD_BINARY).parent_path().c_str(), 1);
  Process script({"/bin/bash", HA_LOCAL_SCRIPT, ha}, Process::Stderr::kMerge);
  // Whatever happens, nothing it started outlives the test.
  auto pids = [&] {
    std::vector<pid_t> out;
    for (const char* name : {"r1", "r2", "r3", "m1", "m2", "m3"})
      if (const std::string pid = testing_support::FirstLine(ha + "/run/" + name + ".pid");
          !pid.empty())
        out.push_back(std::stoi(pid));
    return out;
  };
  struct Reaper {
    std::function<std::vector<pid_t>()> pids;
    ~Reaper() {
      for (pid_t pid : pids()) kill(pid, SIGKILL);
    }
  } reaper{pids};
  const std::string leader = script.WaitForLine("ha-local: leader: ", std::chrono::seconds(90));
  if (leader.empty() &&
      script.WaitExit(std::chrono::seconds(1)).output.find("is in use") != std::string::npos)
    GTEST_SKIP() << "ha-local's fixed ports are in use on this machine";
  ASSERT_NE(leader.find("https://"), std::string::npos) << leader;
  ASSERT_FALSE(script.WaitForLine("Ctrl-C stops everything", std::chrono::seconds(10)).empty());
  const std::string url =
      leader.substr(leader.find("https://"), leader.find(" epoch") - leader.find("https://"));
  const tls::Credentials trust{"", "", api::TrustIn(ha + "/r1").trust_pem};
  const std::string token = testing_support::FirstLine(ha + "/r1/token");
  ASSERT_TRUE(api::ApiClient(url, token, 30, trust)
                  .Call("POST", "/v1/nodes", Json{{"id", "n1"}, {"resources", {{"cpu", 1}}}})
                  .ok());
  const std::string other =
      url.ends_with(":7490") ? "https://127.0.0.1:7491" : "https://127.0.0.1:7490";
  Result<Json> node = api::ApiClient(other, token, 30, trust).Call("GET", "/v1/nodes/n1");
  EXPECT_TRUE(node.ok()) << node.status().message();
  const std::vector<pid_t> started = pids();
  ASSERT_EQ(started.size(), 6u);
  script.Signal(SIGTERM);
  const Process::Exit exit = script.WaitExit(std::chrono::seconds(60));
  EXPECT_NE(exit.output.find("ha-local: stopped"), std::string::npos) << exit.output;
  for (pid_t pid : started) EXPECT_NE(kill(pid, 0), 0) << "pid " << pid << " still runs";
}

}  // namespace
}  // namespace berth
