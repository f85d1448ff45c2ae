// Real nodes end to end: a berthd process, two berth-node processes with
// their own data directories on loopback, and tasks that are real
// processes. Heartbeats are fast here (--heartbeat-period 100ms x 3), so
// a killed node is down within a second.
//
// Everything is awaited on what it waits for (an API answer, a file, a
// process gone), polled with a bound. Every process started is stopped by
// its pid; a node's tasks (which outlive their berth-node by design) are
// killed by the pids their data directory records, and their supervisors
// then remove the tasks' cgroups: every test ends checking that none of
// its tasks' cgroups is left.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "api/api_client.h"
#include "core/quantity.h"
#include "executor/cgroup_files.h"
#include "executor/test_programs.h"
#include "process.h"
#include "store/test_dir.h"

namespace berth {
namespace {

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

using api::Json;
using testing_support::Eventually;
using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;
using testing_support::TaskDirs;

constexpr auto kBound = std::chrono::seconds(30);

bool Alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file under a node's task directories, for a failure's message.
std::string Listing(const std::string& data_dir) {
  std::string out = data_dir + ":\n";
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data_dir + "/tasks", ec))
    out += "  " + entry.path().string().substr(data_dir.size()) + "\n";
  return out;
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Lines of a file (0 when it does not exist).
int LineCount(const std::string& path) {
  const std::string text = ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// berth's group in each cgroup v1 hierarchy a berth-node puts tasks in
// (executor::PrepareLimits), whether it exists or not.
std::vector<std::string> BerthCgroupsV1() {
  const std::map<std::string, std::string> mounts =
      executor::CgroupV1Mounts(ReadFile("/proc/mounts"));
  std::vector<std::string> groups;
  for (const char* controller : {"memory", "cpu", "cpuacct", "pids"}) {
    const auto it = mounts.find(controller);
    if (it == mounts.end()) continue;
    const std::string group = it->second + "/berth";
    if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
  }
  return groups;
}

// The cgroup v1 groups of task run `id` (executor::ProcessExecutor's
// task-<id>) that exist.
std::vector<std::string> TaskCgroups(const std::string& id) {
  std::vector<std::string> found;
  for (const std::string& parent : BerthCgroupsV1())
    if (std::filesystem::exists(parent + "/task-" + id)) found.push_back(parent + "/task-" + id);
  return found;
}

class NodeE2eTest : public testing::Test {
 protected:
  void SetUp() override { StartBerthd(); }
  // The nodes are killed (SIGKILL), then their tasks; each task's
  // supervisor then removes its cgroups, which is checked.
  void TearDown() override {
    for (auto& [name, node] : nodes_) node.reset();
    for (const char* name : {"n1", "n2"}) testing_support::KillTasksOf(DataDir(name));
    berthd_.reset();
    for (const char* name : {"n1", "n2"}) {
      for (const std::string& id : TaskDirs(DataDir(name), false)) {
        for (const std::string& cgroup : TaskCgroups(id)) {
          ADD_FAILURE() << cgroup << " is left";
          executor::KillCgroupProcs(cgroup);  // so that a failed test leaves nothing either
          Eventually([&] { return ::rmdir(cgroup.c_str()) == 0 || errno != EBUSY; });
        }
      }
    }
    // A berth-node killed by a test leaves berth's cgroup v1 groups (an
    // orderly stop removes them when empty): rmdir removes them only when
    // empty, so a real berth-node's tasks are not disturbed.
    for (const std::string& group : BerthCgroupsV1()) ::rmdir(group.c_str());
  }

  // Starts berthd (again on the same ports: its API's and its node
  // sessions'); the first time, writes the node join token where the nodes
  // read it. Two HTTP threads hold one
  // waiting assignments request: the other node is told to wait, and asks
  // again when its heartbeat says its assignments changed.
  void StartBerthd() {
    // A session port of its own on each start too: berthd's default (7479)
    // would collide with another test's berthd.
    berthd_ = std::make_unique<Process>(
        Concat({BERTHD_BINARY, "--data-dir", dir_.path() + "/berthd", "--port",
                port_.empty() ? "0" : port_, "--session-port",
                session_port_.empty() ? "0" : session_port_, "--heartbeat-period", "100ms"},
               berthd_args_));
    port_ = PortInLine(berthd_->WaitForLine("listening on", kBound));
    ASSERT_FALSE(port_.empty()) << "berthd did not start";
    const std::string sessions = berthd_->WaitForLine("node sessions", kBound);
    ASSERT_NE(sessions.rfind("port "), std::string::npos) << "berthd serves no node sessions";
    session_port_ = sessions.substr(sessions.rfind("port ") + 5);
    token_ = FirstLine(dir_.path() + "/berthd/token");
    if (std::filesystem::exists(dir_.path() + "/node-token")) return;
    Result<Json> join = Call("GET", "/v1/tokens/node");
    ASSERT_TRUE(join.ok()) << join.status().message();
    std::ofstream(dir_.path() + "/node-token") << (*join)["token"].get<std::string>() << "\n";
    std::filesystem::permissions(
        dir_.path() + "/node-token",
        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  std::string DataDir(const std::string& name) const { return dir_.path() + "/" + name; }

  // Starts berth-node `name`; returns once it joined.
  void StartNode(const std::string& name) {
    auto node = std::make_unique<Process>(std::vector<std::string>{
        BERTH_NODE_BINARY, "--join", "https://127.0.0.1:" + port_, "--token-file",
        dir_.path() + "/node-token", "--data-dir", DataDir(name), "--hostname", name, "--listen",
        "127.0.0.1:0", "--exec", BERTH_EXEC_BINARY});
    ASSERT_NE(node->WaitForLine("joined", kBound), "") << name << " did not join";
    ASSERT_NE(node->WaitForLine("full list", kBound), "") << name << " got no assignments";
    nodes_[name] = std::move(node);
  }

  // Calls berthd with the admin token, or `token` presenting node `as`'s
  // certificate when given (a node's credential goes only with it).
  Result<Json> Call(const std::string& method, const std::string& path, const Json& body = nullptr,
                    const std::string& token = "", const std::string& as = "") {
    tls::Credentials tls = api::TrustIn(as.empty() ? dir_.path() + "/berthd" : DataDir(as));
    if (as.empty()) tls.cert_pem = tls.key_pem = "";
    api::ApiClient client("https://127.0.0.1:" + port_, token.empty() ? token_ : token, 30, tls);
    return client.Call(method, path, body);
  }
  std::string JobState(const std::string& job) {
    Result<Json> got = Call("GET", "/v1/jobs/" + job);
    return got.ok() ? got->value("state", "") : "";
  }
  // How many of `job`'s tasks are in `state`.
  int TasksIn(const std::string& job, const std::string& state) {
    Result<Json> tasks = Call("GET", "/v1/tasks?job=" + job + "&state=" + state);
    return tasks.ok() ? static_cast<int>((*tasks)["tasks"].size()) : -1;
  }
  void SetSlots(const std::string& node, int slots) {
    Result<Json> patched = Call("PATCH", "/v1/nodes/" + node, Json{{"slots", slots}});
    ASSERT_TRUE(patched.ok()) << patched.status().message();
  }
  Json Task(const std::string& name) {
    Result<Json> task = Call("GET", "/v1/tasks/" + name);
    return task.ok() ? *task : Json::object();
  }
  // Runs the berth CLI against berthd; its output, or "" when it failed.
  std::string Berth(std::vector<std::string> args) {
    args.insert(args.begin(), BERTH_BINARY);
    // Before "--": what follows it is the task's command.
    args.insert(std::find(args.begin(), args.end(), "--"),
                {"--server", "https://127.0.0.1:" + port_, "--token", token_, "--data-dir",
                 dir_.path() + "/berthd"});
    Process cli(args, Process::Stderr::kMerge);
    Process::Exit exit = cli.WaitExit(kBound);
    return exit.status == 0 ? exit.output : "";
  }
  void CreateService(const std::string& id, int replicas, const std::vector<std::string>& extra,
                     const std::vector<std::string>& command) {
    std::vector<std::string> args = {
        "service", "create", id, "--replicas", std::to_string(replicas), "--detach"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    ASSERT_NE(Berth(args), "") << "service create " << id;
  }

  // Why the limits tests cannot run on `node` ("" when they can): it must
  // enforce limits, in cgroup v1 groups, which they read.
  std::string WhyNoLimitsV1(const std::string& node) {
    const Json b = Call("GET", "/v1/nodes/" + node)->value("berth_node", Json::object());
    if (!b.value("limits_enforced", false))
      return "needs a node that enforces limits: " + b.value("limits", std::string("?"));
    if (b.value("limits_cgroup", "") != "v1")
      return "reads the tasks' cgroup v1 groups; this node has cgroup " +
             b.value("limits_cgroup", std::string("?"));
    return "";
  }
  // The pids of a task run on `node`: {task, shim}; {0, 0} before its
  // supervisor wrote them.
  std::pair<pid_t, pid_t> PidsOf(const std::string& node, const std::string& id) {
    std::istringstream in(ReadFile(DataDir(node) + "/tasks/" + id + "/pid"));
    pid_t task = 0, shim = 0;
    uint64_t start = 0;
    if (!(in >> task >> start >> shim)) return {0, 0};
    return {task, shim};
  }
  // The id of `task`'s run once it runs on `node` in a group of each of
  // berth's cgroup v1 hierarchies; "" when it does not within the bound.
  std::string JoinedRun(const std::string& node, const std::string& task) {
    std::string id;
    const bool joined = Eventually([&] {
      const Json t = Task(task);
      id = t.value("id", "");
      const pid_t pid = id.empty() ? 0 : PidsOf(node, id).first;
      const std::vector<std::string> groups = TaskCgroups(id);
      return pid > 0 && t.value("state", "") == "running" &&
             groups.size() == BerthCgroupsV1().size() &&
             std::all_of(groups.begin(), groups.end(), [&](const std::string& group) {
               const std::vector<pid_t> procs = executor::CgroupProcs(group);
               return std::find(procs.begin(), procs.end(), pid) != procs.end();
             });
    });
    return joined ? id : "";
  }

  store::TestDir dir_;
  std::unique_ptr<Process> berthd_;
  std::string port_, session_port_, token_;
  std::vector<std::string> berthd_args_;  // more flags for berthd
  std::map<std::string, std::unique_ptr<Process>> nodes_;
};

// Over TLS a node opens its session (docs/agent.md, "Sessions") and its
// task comes pushed on it; berthd's gauge counts the session.
TEST_F(NodeE2eTest, ANodeKeepsOneSessionAndItsTaskRuns) {
  StartNode("n1");
  httplib::SSLClient http("127.0.0.1", std::stoi(port_));
  http.set_ca_cert_path((dir_.path() + "/berthd/ca.pem").c_str());
  http.set_bearer_token_auth(token_);
  auto sessions = [&] {
    httplib::Result metrics = http.Get("/metrics");
    return metrics && metrics->body.find("\nberth_node_sessions 1\n") != std::string::npos;
  };
  ASSERT_TRUE(Eventually(sessions)) << http.Get("/metrics")->body;
  CreateService("web", 1, {}, {"sleep", "1000"});
  EXPECT_TRUE(Eventually([&] { return Task("web.1").value("state", "") == "running"; }))
      << Task("web.1").dump();
  EXPECT_TRUE(sessions());
}

TEST_F(NodeE2eTest, TasksRunAsProcessesAndEndAsTheirExitStatusSays) {
  StartNode("n1");
  StartNode("n2");
  CreateService("ok", 1, {"--restart-condition", "none"}, {"sh", "-c", "echo done; exit 0"});
  CreateService(
      "bad", 1,
      {"--restart-condition", "on-failure", "--restart-delay", "0s", "--restart-max-attempts", "1"},
      {"sh", "-c", "echo failing; exit 3"});
  CreateService("missing", 1, {"--restart-condition", "none"}, {"/no/such/program"});
  EXPECT_TRUE(Eventually([&] { return Task("ok.1").value("state", "") == "complete"; }))
      << Task("ok.1").dump();
  // exit 3 fails the task, and the policy restarts it once.
  auto failed = [&] {
    Result<Json> tasks = Call("GET", "/v1/tasks?service=bad");
    int n = 0;
    for (const Json& t : (*tasks)["tasks"])
      n += t.value("state", "") == "failed" && t.value("message", "").starts_with("exit status 3");
    return n;
  };
  EXPECT_TRUE(Eventually([&] { return failed() == 2; }))
      << Call("GET", "/v1/tasks?service=bad")->dump();
  EXPECT_TRUE(Eventually([&] { return Task("missing.1").value("state", "") == "rejected"; }))
      << Task("missing.1").dump();
  EXPECT_NE(Task("missing.1").value("message", "").find("No such file or directory"),
            std::string::npos)
      << Task("missing.1").dump();
  // The output is kept and shown through berthd.
  EXPECT_EQ(Berth({"task", "logs", "ok.1"}), "done\n");
  const std::string logs = Berth({"service", "logs", "bad"});
  EXPECT_EQ(std::count(logs.begin(), logs.end(), '\n'), 2) << logs;
  EXPECT_NE(logs.find("bad.1."), std::string::npos) << logs;
  EXPECT_NE(logs.find("| failing"), std::string::npos) << logs;
}

// The shell ignores SIGTERM and so does the child it started (an ignored
// signal stays ignored across exec): both die by SIGKILL once the grace
// period has passed.
TEST_F(NodeE2eTest, AStoppedTaskThatIgnoresSigtermIsKilledWithItsChildrenAfterItsGrace) {
  StartNode("n1");
  CreateService("stubborn", 1, {"--stop-grace-period", "700ms"},
                {"sh", "-c", "trap '' TERM; sleep 1000 & echo child $!; wait"});
  std::string id;
  pid_t child = 0;
  ASSERT_TRUE(Eventually([&] {
    const Json task = Task("stubborn.1");
    id = task.value("id", "");
    const std::string logs =
        task.value("state", "") == "running" ? Berth({"task", "logs", id}) : "";
    return std::sscanf(logs.c_str(), "child %d", &child) == 1;
  }));
  const std::string dir = DataDir("n1") + "/tasks/" + id;
  std::istringstream pids(ReadFile(dir + "/pid"));
  pid_t shell = 0;
  pids >> shell;
  ASSERT_TRUE(Alive(shell) && Alive(child));
  const auto stopped_at = std::chrono::system_clock::now();
  ASSERT_NE(Berth({"service", "rm", "stubborn"}), "");
  ASSERT_TRUE(Eventually([&] { return std::filesystem::exists(dir + "/exit"); }));
  const std::string exit = ReadFile(dir + "/exit");
  EXPECT_NE(exit.find("signal 9"), std::string::npos) << exit;
  EXPECT_NE(exit.find("stopped 1"), std::string::npos) << exit;
  int64_t finished_ms = 0;
  if (const size_t at = exit.find("finished_at_ms "); at != std::string::npos)
    finished_ms = std::stoll(exit.substr(at + 15));
  const int64_t stopped_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(stopped_at.time_since_epoch()).count();
  EXPECT_GE(finished_ms - stopped_ms, 700) << "killed before its grace period";
  EXPECT_FALSE(Alive(shell));
  EXPECT_FALSE(Alive(child));
}

TEST_F(NodeE2eTest, AKilledNodeGoesDownItsTasksMoveAndItsRestartRunsNothingTwice) {
  StartNode("n1");
  StartNode("n2");
  CreateService("web", 2, {}, {"sleep", "1000"});
  auto running_on = [&](const std::string& node) {
    Result<Json> tasks = Call("GET", "/v1/tasks?service=web&state=running&desired_state=running");
    int n = 0;
    for (const Json& t : (*tasks)["tasks"]) n += t.value("node", "") == node;
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return running_on("n1") == 1 && running_on("n2") == 1; }));
  nodes_["n1"]->Kill(SIGKILL);
  EXPECT_TRUE(
      Eventually([&] { return Call("GET", "/v1/nodes/n1")->value("state", "") == "down"; }));
  EXPECT_TRUE(Eventually([&] { return running_on("n2") == 2; }));
  EXPECT_EQ(TaskDirs(DataDir("n1"), true).size(), 1u);  // its process outlived berth-node
  // Back, n1 adopts its task, which was replaced meanwhile: berthd stops it.
  StartNode("n1");
  EXPECT_TRUE(Eventually([&] { return TaskDirs(DataDir("n1"), true).empty(); }));
  EXPECT_EQ(Call("GET", "/v1/nodes/n1")->value("state", ""), "ready");
  EXPECT_EQ((*Call("GET", "/v1/nodes"))["nodes"].size(), 2u);  // the same node, not a new one
  EXPECT_EQ(TaskDirs(DataDir("n2"), true).size(), 2u);
  EXPECT_EQ(running_on("n2"), 2);
}

// Certificates of 10 s: berthd renews its own and each node its own at
// 50-80% of their life, with no restart and no failed heartbeat; a CA
// rotation moves the node to the new root, and once finished the node still
// runs what it is given.
TEST_F(NodeE2eTest, CertificatesRenewAndACaRotationMovesNodesWithoutARestart) {
  berthd_->Kill(SIGTERM);
  berthd_->WaitExit(kBound);
  berthd_args_ = {"--cert-expiry", "10s"};
  StartBerthd();
  StartNode("n1");
  // Two renewals of the node's certificate: the second comes 10-16 s after
  // berthd started, past its first certificate's life, so berthd renewed
  // its own too (the node's calls verify it).
  for (int renewal = 0; renewal < 2; ++renewal)
    ASSERT_NE(nodes_["n1"]->WaitForLine("renewed the node's certificate", kBound), "");
  ASSERT_EQ(Call("GET", "/v1/nodes/n1")->value("state", ""), "ready");

  Result<Json> rotated = Call("POST", "/v1/ca/rotate");
  ASSERT_TRUE(rotated.ok()) << rotated.status().message();
  const std::string digest = (*rotated)["digest"];
  ASSERT_NE(nodes_["n1"]->WaitForLine("(CA " + digest.substr(0, 12) + ")", kBound), "");
  ASSERT_TRUE(Call("POST", "/v1/ca/rotate?finish=true").ok());
  EXPECT_EQ(Call("POST", "/v1/ca/rotate?finish=true").status().code(), StatusCode::kConflict);
  // The CLI takes the new bundle from berthd's data directory.
  const Json service = {
      {"id", "after"}, {"replicas", 1}, {"task", {{"command", "sleep"}, {"args", {"100"}}}}};
  ASSERT_TRUE(Call("POST", "/v1/services", service).ok());
  EXPECT_TRUE(Eventually([&] {
    Result<Json> tasks = Call("GET", "/v1/tasks?service=after&state=running");
    return tasks.ok() && (*tasks)["tasks"].size() == 1;
  })) << Call("GET", "/v1/tasks?service=after")->dump();
  EXPECT_EQ(Call("GET", "/v1/nodes/n1")->value("state", ""), "ready");
  EXPECT_EQ(nodes_["n1"]->WaitForLine("heartbeat failed", std::chrono::milliseconds(300)), "");
}

TEST_F(NodeE2eTest, ARestartedBerthdChangesNothingOnTheNodes) {
  StartNode("n1");
  StartNode("n2");
  CreateService("web", 4, {}, {"sleep", "1000"});
  std::map<std::string, std::string> pids;  // every task's pid file, which a restart would change
  // A task's directory comes before its supervisor writes the pid file.
  ASSERT_TRUE(Eventually([&] {
    pids.clear();
    for (const std::string node : {"n1", "n2"})
      for (const std::string& id : TaskDirs(DataDir(node), true))
        pids[id] = ReadFile(DataDir(node) + "/tasks/" + id + "/pid");
    return pids.size() == 4 &&
           std::all_of(pids.begin(), pids.end(), [](const auto& p) { return !p.second.empty(); });
  }));
  berthd_->Kill(SIGKILL);
  StartBerthd();
  // Each node sees a new berthd and takes its full list.
  for (const std::string node : {"n1", "n2"})
    ASSERT_NE(nodes_[node]->WaitForLine("full list", kBound), "") << node;
  ASSERT_TRUE(Call("GET", "/v1/health?wait=settled").ok());
  std::map<std::string, std::string> after;
  for (const std::string node : {"n1", "n2"}) {
    EXPECT_EQ(TaskDirs(DataDir(node), true).size(), 2u) << node;
    for (const std::string& id : TaskDirs(DataDir(node), false))
      after[id] = ReadFile(DataDir(node) + "/tasks/" + id + "/pid");
  }
  EXPECT_EQ(after, pids) << Listing(DataDir("n1")) << Listing(DataDir("n2"));
  Result<Json> running = Call("GET", "/v1/tasks?service=web&state=running");
  EXPECT_EQ((*running)["tasks"].size(), 4u);
}

TEST_F(NodeE2eTest, ANodesTokensCannotActAsTheAdmin) {
  StartNode("n1");
  const std::string join = FirstLine(dir_.path() + "/node-token");
  const std::string credential = Json::parse(ReadFile(DataDir("n1") + "/node.json"))["credential"];
  const Json service = {{"id", "web"}, {"replicas", 1}};
  for (const auto& [token, as] : {std::pair{join, ""}, {credential, "n1"}}) {
    Result<Json> created = Call("POST", "/v1/services", service, token, as);
    EXPECT_EQ(created.status().code(), StatusCode::kPermissionDenied) << created.status().message();
    EXPECT_EQ(Call("GET", "/v1/nodes", nullptr, token, as).status().code(),
              StatusCode::kPermissionDenied);
  }
  EXPECT_EQ(Call("POST", "/v1/node/heartbeat", nullptr, join).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(Call("POST", "/v1/node/heartbeat", nullptr, credential, "n1").ok());
  // Mutual TLS binds them: the credential without the node's certificate,
  // and the node's certificate with the admin token, are refused.
  Result<Json> bare = Call("POST", "/v1/node/heartbeat", nullptr, credential);
  EXPECT_EQ(bare.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(bare.status().message().find("must present its certificate"), std::string::npos)
      << bare.status().message();
  Result<Json> as_admin = Call("GET", "/v1/nodes", nullptr, "", "n1");
  EXPECT_EQ(as_admin.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(as_admin.status().message().find("a node's certificate cannot make admin calls"),
            std::string::npos)
      << as_admin.status().message();
  EXPECT_EQ(Call("GET", "/v1/services/web").status().code(), StatusCode::kNotFound);
}

// Defect 6: `node rm` of a ready node needed no force, and the removed
// berth-node joined again within seconds. Now a ready node is removed only
// with force; the removed node is refused (its credential and its
// machine, also after berthd restarts), stops its tasks and exits 1; its
// machine joins again, as a new node, once its node.json is deleted.
TEST_F(NodeE2eTest, ARemovedNodeNeedsForceIsRefusedStopsItsTasksAndDoesNotJoinAgain) {
  StartNode("n1");
  StartNode("n2");
  CreateService("web", 2, {}, {"sleep", "1000"});
  auto running_on = [&](const std::string& node) {
    Result<Json> tasks = Call("GET", "/v1/tasks?service=web&state=running&desired_state=running");
    int n = 0;
    for (const Json& t : (*tasks)["tasks"]) n += t.value("node", "") == node;
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return running_on("n1") == 1 && running_on("n2") == 1; }));
  ASSERT_EQ(TaskDirs(DataDir("n1"), true).size(), 1u);
  const std::string credential = Json::parse(ReadFile(DataDir("n1") + "/node.json"))["credential"];
  const Json registration = {
      {"hostname", "n1"},
      {"machine", Json::parse(ReadFile(DataDir("n1") + "/node.json"))["machine"]}};
  auto revision = [&] { return Call("GET", "/v1/health")->value("revision", int64_t{0}); };

  // Ready: refused without force, and nothing changes.
  ASSERT_TRUE(Call("GET", "/v1/health?wait=settled").ok());
  const int64_t before = revision();
  Result<Json> refused = Call("DELETE", "/v1/nodes/n1");
  EXPECT_EQ(refused.status().code(), StatusCode::kConflict);
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("?force=true"), std::string::npos);
  EXPECT_EQ(Call("DELETE", "/v1/nodes/n1?force=yes").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(revision(), before);
  EXPECT_EQ(Call("GET", "/v1/nodes/n1")->value("state", ""), "ready");

  // Forced: the node is told at its next call, stops its task and exits 1.
  ASSERT_TRUE(Call("DELETE", "/v1/nodes/n1?force=true").ok());
  const std::string told = nodes_["n1"]->WaitForLine("was removed from the cluster", kBound);
  EXPECT_NE(told, "");
  EXPECT_NE(
      // Its task is stopped by now or by this: berthd may have told it to
      // stop the task before its next call was refused.
      nodes_["n1"]->WaitForLine("removed from the cluster: stopping its", kBound), "")
      << "after: " << told;
  const Process::Exit exit = nodes_["n1"]->WaitExit(kBound);
  EXPECT_TRUE(WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 1) << exit.status;
  EXPECT_TRUE(Eventually([&] { return TaskDirs(DataDir("n1"), true).empty(); }))
      << Listing(DataDir("n1"));
  EXPECT_TRUE(Eventually([&] { return running_on("n2") == 2; }));

  // Refused, by a 403 that says why, and changing nothing.
  auto expect_refused = [&] {
    ASSERT_TRUE(Call("GET", "/v1/health?wait=settled").ok());
    const int64_t at = revision();
    for (const auto& [method, path] : {std::pair{"POST", "/v1/node/heartbeat"},
                                       {"GET", "/v1/node/assignments"},
                                       {"GET", "/v1/nodes"}}) {
      Result<Json> answer = Call(method, path, nullptr, credential, "n1");
      EXPECT_EQ(answer.status().code(), StatusCode::kPermissionDenied) << path;
      EXPECT_TRUE(answer.status().message().starts_with(
          "node_removed: node 'n1' was removed from the cluster"))
          << answer.status().message();
    }
    Result<Json> rejoin =
        Call("POST", "/v1/node/register", registration, FirstLine(dir_.path() + "/node-token"));
    EXPECT_EQ(rejoin.status().code(), StatusCode::kPermissionDenied);
    EXPECT_TRUE(rejoin.status().message().starts_with("node_removed: node 'n1' was removed"))
        << rejoin.status().message();
    EXPECT_EQ(revision(), at);
    // berth-node started again on its data directory exits 1, saying how to join anew.
    Process again({BERTH_NODE_BINARY, "--join", "https://127.0.0.1:" + port_, "--token-file",
                   dir_.path() + "/node-token", "--data-dir", DataDir("n1"), "--hostname", "n1",
                   "--listen", "127.0.0.1:0", "--exec", BERTH_EXEC_BINARY},
                  Process::Stderr::kMerge);
    const Process::Exit refused_start = again.WaitExit(kBound);
    EXPECT_TRUE(WIFEXITED(refused_start.status) && WEXITSTATUS(refused_start.status) == 1)
        << refused_start.output;
    EXPECT_NE(refused_start.output.find("delete node.json"), std::string::npos)
        << refused_start.output;
    EXPECT_EQ(refused_start.output.find("joined"), std::string::npos) << refused_start.output;
    Result<Json> nodes = Call("GET", "/v1/nodes");
    ASSERT_TRUE(nodes.ok());
    EXPECT_EQ((*nodes)["nodes"].size(), 1u) << nodes->dump();
  };
  expect_refused();
  // The deny record is stored: a restarted berthd refuses the node too.
  berthd_->Kill(SIGKILL);
  StartBerthd();
  expect_refused();

  // Its node.json deleted, the machine joins again as a new node.
  std::filesystem::remove(DataDir("n1") + "/node.json");
  StartNode("n1");
  EXPECT_EQ(Call("GET", "/v1/nodes/n1")->value("state", ""), "ready");
  EXPECT_NE(Json::parse(ReadFile(DataDir("n1") + "/node.json"))["credential"], credential);
}

// Defect 7: --publish 8080:80 (ingress mode, the default) was accepted
// though nothing listens and nothing routes. berthd refuses it, saying
// why and what to use; host mode is taken.
TEST_F(NodeE2eTest, IngressPortsAreRefusedWithTheReasonAndTheFix) {
  Process cli({BERTH_BINARY, "service", "create", "web", "--detach", "--publish", "8080:80",
               "--server", "https://127.0.0.1:" + port_, "--token", token_, "--data-dir",
               dir_.path() + "/berthd", "--", "sleep", "1"},
              Process::Stderr::kMerge);
  const Process::Exit exit = cli.WaitExit(kBound);
  EXPECT_NE(exit.status, 0) << exit.output;
  EXPECT_NE(exit.output.find("task.ports[0].mode: ingress mode (the default) publishes through a "
                             "routing mesh, which Berth does not have"),
            std::string::npos)
      << exit.output;
  EXPECT_NE(exit.output.find("--publish mode=host,target=80,published=8080"), std::string::npos)
      << exit.output;
  const Json ingress = {{"ports", {{{"published", 8080}, {"mode", "ingress"}}}}};
  Result<Json> api = Call("POST", "/v1/services", Json{{"id", "web"}, {"task", ingress}});
  EXPECT_EQ(api.status().code(), StatusCode::kInvalidArgument) << api.status().message();
  Result<Json> job = Call(
      "POST", "/v1/jobs",
      Json{{"id", "batch"}, {"requestor", "r"}, {"task", ingress}, {"tasks", {Json::object()}}});
  EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument) << job.status().message();
  EXPECT_EQ(Call("GET", "/v1/services/web").status().code(), StatusCode::kNotFound);
  CreateService("web", 1, {"--publish", "mode=host,target=80,published=8080"}, {"sleep", "1"});
  Result<Json> updated = Call("PATCH", "/v1/services/web", Json{{"task", ingress}});
  EXPECT_EQ(updated.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Call("GET", "/v1/services/web")->value("spec_version", 0), 1);
}

// A job's tasks run on berth-nodes, each its own command through
// {{.Index}}; a failing task is retried (a new run on the node) and then
// stays failed, and the job ends failed once every task ended; a task that
// fails once and then succeeds ends its job complete.
TEST_F(NodeE2eTest, AJobsTasksRunTheirIndexedCommandsAndAFailedTaskIsRetried) {
  StartNode("n1");
  StartNode("n2");
  ASSERT_NE(Berth({"job", "submit", "j", "--requestor", "ci", "--tasks", "3", "--max-retries", "1",
                   "--", "sh", "-c", "echo task {{.Index}}; [ {{.Index}} != 2 ]"}),
            "");
  const std::string mark = dir_.path() + "/ran-once";
  ASSERT_NE(Berth({"job", "submit", "k", "--requestor", "ci", "--", "sh", "-c",
                   "if [ -e " + mark + " ]; then echo second; else touch " + mark +
                       "; echo first; exit 1; fi"}),
            "");
  auto state = [&](const std::string& job) {
    Result<Json> got = Call("GET", "/v1/jobs/" + job);
    return got.ok() ? got->value("state", "") : "";
  };
  EXPECT_TRUE(Eventually([&] { return state("j") == "failed" && state("k") == "complete"; }))
      << Call("GET", "/v1/tasks?job=j")->dump() << Call("GET", "/v1/tasks?job=k")->dump();
  EXPECT_EQ((*Call("GET", "/v1/jobs/j"))["states"], (Json{{"complete", 2}, {"failed", 1}}));
  const Json failed = Task("j.2");
  const std::string message = failed.value("message", "");
  EXPECT_TRUE(message.starts_with("exit status 1") && message.ends_with("; failed after 1 retry"))
      << failed.dump();
  EXPECT_EQ(failed.value("desired_state", ""), "shutdown");
  EXPECT_EQ(Task("j.1").value("desired_state", ""), "complete");
  // Each task's own output, through berthd; a retried task shows its last run.
  const std::string logs = Berth({"job", "logs", "j"});
  for (const char* line : {"j.1@n", "| task 1", "| task 2", "| task 3"})
    EXPECT_NE(logs.find(line), std::string::npos) << line << " in " << logs;
  EXPECT_EQ(Berth({"job", "logs", "k.1"}), "second\n");
  const std::string listed = Berth({"job", "ls"});
  EXPECT_NE(listed.find("failed    complete=2 failed=1"), std::string::npos) << listed;
}

// Issue 30's acceptance: a job of 50 different command lines (a commands
// file), admitted by class beside another class's job, runs across two
// berth-nodes. Every line first waits for a gate file, so that the test sees
// the admission split (75/25 of 8 workers: 6 and 2) before anything ends;
// then all run: each line's own output is in `job logs`, the one failing
// line runs max_retries + 1 times and fails its job, and the other class's
// job, whose commands all succeed, ends complete.
TEST_F(NodeE2eTest, AJobOfFiftyDifferentCommandsIsAdmittedByClassAndRunsAcrossTwoNodes) {
  ASSERT_TRUE(Call("PATCH", "/v1/classes", Json::parse(R"({"classes": {"land": 75, "diff": 25},
                     "requestors": [["^land", "land"], ["^diff", "diff"]]})"))
                  .ok());
  const std::string gate = dir_.path() + "/go", tries = dir_.path() + "/tries";
  auto gated = [&](const std::string& body) {
    return "sh -c 'until [ -e " + gate + " ]; do sleep 0.02; done; " + body + "'\n";
  };
  std::string land = "# fifty different commands, one failing\n", diff;
  for (int i = 1; i <= 50; ++i) {
    const std::string n = std::to_string(i);
    if (i == 17)
      land += gated("echo attempt >> " + tries + "; echo cmd 17: failing; exit 4");
    else if (i % 3 == 0)
      land += gated("echo \"cmd " + n + ": echoed\"");
    else if (i % 3 == 1)
      land += "\n" + gated("printf \"cmd %s: printed\\n\" " + n);
    else
      land += gated("x=" + n + "; echo \"cmd $x: from a variable\"");
  }
  for (int i = 1; i <= 6; ++i) diff += gated("echo diff " + std::to_string(i));
  WriteFile(dir_.path() + "/land.txt", land);
  WriteFile(dir_.path() + "/diff.txt", diff);
  // Both jobs wait while the nodes are paused (no workers), so that
  // admission sees both classes' demand: 4 workers split 3/1, 8 split 6/2.
  StartNode("n1");
  StartNode("n2");
  for (const char* node : {"n1", "n2"})
    ASSERT_TRUE(Call("PATCH", std::string("/v1/nodes/") + node,
                     Json{{"slots", 4}, {"availability", "pause"}})
                    .ok());
  ASSERT_NE(Berth({"job", "submit", "build", "--requestor", "land-ci", "--max-retries", "2",
                   "--commands-file", dir_.path() + "/land.txt"}),
            "");
  ASSERT_NE(Berth({"job", "submit", "check", "--requestor", "diff-ci", "--commands-file",
                   dir_.path() + "/diff.txt"}),
            "");
  for (const char* node : {"n1", "n2"})
    ASSERT_TRUE(
        Call("PATCH", std::string("/v1/nodes/") + node, Json{{"availability", "active"}}).ok());
  EXPECT_TRUE(Eventually([&] {
    return TasksIn("build", "running") == 6 && TasksIn("check", "running") == 2;
  })) << Call("GET", "/v1/tasks?state=running")->dump();
  EXPECT_EQ(TasksIn("build", "new"), 44);
  EXPECT_EQ(TasksIn("check", "new"), 4);
  std::string why;
  EXPECT_TRUE(Eventually([&] {
    const Json waiting = (*Call("GET", "/v1/tasks?job=build&state=new"))["tasks"];
    if (waiting.empty()) return false;
    why = Call("GET", "/v1/tasks/" + waiting[0].value("id", "") + "/why")->value("reason", "");
    return why.starts_with(
        "waiting for admission: class 'land' (requestor 'land-ci') runs 6 of its entitlement of "
        "6 (75% of 8 workers)");
  })) << why;
  std::set<std::string> nodes;
  const Result<Json> running = Call("GET", "/v1/tasks?job=build&state=running");
  for (const Json& t : (*running)["tasks"]) nodes.insert(t.value("node", ""));
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2"})) << running->dump();

  WriteFile(gate, "");
  EXPECT_TRUE(Eventually([&] { return JobState("build") == "failed"; }))
      << Call("GET", "/v1/jobs/build")->dump();
  EXPECT_TRUE(Eventually([&] { return JobState("check") == "complete"; }))
      << Call("GET", "/v1/jobs/check")->dump();
  EXPECT_EQ((*Call("GET", "/v1/jobs/build"))["states"], (Json{{"complete", 49}, {"failed", 1}}));
  EXPECT_EQ(LineCount(tries), 3);  // max_retries 2: three runs
  const Json failed = Task("build.17");
  EXPECT_EQ(failed.value("message", ""), "exit status 4; failed after 2 retries") << failed.dump();
  EXPECT_EQ(failed.value("retries", 0), 2);
  const std::string logs = Berth({"job", "logs", "build"});
  for (int i = 1; i <= 50; ++i) {
    const std::string n = std::to_string(i);
    const std::string line = i == 17      ? "cmd 17: failing"
                             : i % 3 == 0 ? "cmd " + n + ": echoed"
                             : i % 3 == 1 ? "cmd " + n + ": printed"
                                          : "cmd " + n + ": from a variable";
    EXPECT_NE(logs.find("| " + line + "\n"), std::string::npos) << line << " in " << logs;
  }
  EXPECT_EQ(std::count(logs.begin(), logs.end(), '\n'), 50) << logs;
  const std::string checked = Berth({"job", "logs", "check"});
  EXPECT_EQ(std::count(checked.begin(), checked.end(), '\n'), 6) << checked;
}

// berthd killed with SIGKILL while a job runs, and started again on its
// data directory: no task is lost and none runs twice. Each task appends
// its index to a marker file of its own; once the job completes every
// marker holds exactly one line.
TEST_F(NodeE2eTest, ABerthdKilledMidJobLosesNoTaskAndRunsNoneTwice) {
  constexpr int kTasks = 24;
  const std::string marks = dir_.path() + "/marks";
  std::filesystem::create_directories(marks);
  Json commands = Json::array(), tasks = Json::array();
  for (int i = 1; i <= kTasks; ++i) {
    const std::string n = std::to_string(i);
    commands.push_back({"sh", "-c", "echo " + n + " >> " + marks + "/" + n + "; sleep 0.2"});
    tasks.push_back(Json::object());
  }
  StartNode("n1");
  StartNode("n2");
  SetSlots("n1", 2);
  SetSlots("n2", 2);
  ASSERT_TRUE(Call("POST", "/v1/jobs",
                   Json{{"id", "j"}, {"requestor", "ci"}, {"commands", commands}, {"tasks", tasks}})
                  .ok());
  auto marked = [&] {
    int n = 0;
    for (int i = 1; i <= kTasks; ++i) n += std::filesystem::exists(marks + "/" + std::to_string(i));
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return marked() >= 6; }));
  berthd_->Kill(SIGKILL);
  ASSERT_LT(marked(), kTasks) << "the job ended before berthd was killed";
  StartBerthd();
  EXPECT_TRUE(Eventually([&] { return JobState("j") == "complete"; }))
      << Call("GET", "/v1/tasks?job=j")->dump();
  for (int i = 1; i <= kTasks; ++i)
    EXPECT_EQ(ReadFile(marks + "/" + std::to_string(i)), std::to_string(i) + "\n") << "task " << i;
  EXPECT_EQ((*Call("GET", "/v1/jobs/j"))["states"], (Json{{"complete", kTasks}}));
}

// Bad jobs are refused before anything is stored: the CLI exits non-zero
// saying why, the API answers 400 with the reason.
TEST_F(NodeE2eTest, BadJobsAreRefusedWithTheirReasonAndChangeNothing) {
  auto cli = [&](std::vector<std::string> args, const std::string& file_text = "") {
    const std::string file = dir_.path() + "/bad-commands";
    WriteFile(file, file_text);
    args.insert(args.begin(), {BERTH_BINARY, "job", "submit", "j", "--requestor", "r"});
    for (std::string& a : args) a = a == "FILE" ? file : a;
    args.insert(std::find(args.begin(), args.end(), "--"),
                {"--server", "https://127.0.0.1:" + port_, "--token", token_, "--data-dir",
                 dir_.path() + "/berthd"});
    Process berth(args, Process::Stderr::kMerge);
    Process::Exit exit = berth.WaitExit(kBound);
    EXPECT_TRUE(WIFEXITED(exit.status) && WEXITSTATUS(exit.status) != 0) << exit.output;
    return exit.output;
  };
  EXPECT_EQ(cli({"--tasks", "0"}), "berth: --tasks 0: a job has 1 to 100000 tasks\n");
  EXPECT_EQ(cli({"--tasks", "100001"}), "berth: --tasks 100001: a job has 1 to 100000 tasks\n");
  EXPECT_EQ(cli({"--", "echo", "{{.Idx}}"}),
            "berth: task.args[0]: unknown template '{{.Idx}}' (only {{.Index}} expands)\n");
  const std::string file = dir_.path() + "/bad-commands";
  EXPECT_EQ(cli({"--commands-file", "FILE"}, "\n# nothing\n"),
            "berth: " + file +
                ": no command lines (the file is empty or holds only blank lines and "
                "comments)\n");
  EXPECT_EQ(cli({"--commands-file", "FILE"}, "true\nsh -c \"echo\n"),
            "berth: " + file + ": line 2: unterminated double quote (\")\n");

  const int64_t revision = Call("GET", "/v1/health")->value("revision", int64_t{0});
  auto api = [&](const Json& change) {
    Json job = {{"id", "j"}, {"requestor", "r"}, {"tasks", {Json::object(), Json::object()}}};
    job.update(change);
    Result<Json> answer = Call("POST", "/v1/jobs", job);
    EXPECT_EQ(answer.status().code(), StatusCode::kInvalidArgument) << answer.status().message();
    return answer.status().message();
  };
  EXPECT_EQ(api({{"tasks", Json::array()}}), "tasks: expected 1 to 100000 tasks");
  EXPECT_EQ(api({{"task", {{"command", "echo"}, {"args", {"{{.Index"}}}}}),
            "task.args[0]: '{{' is not closed by '}}' (only {{.Index}} expands)");
  EXPECT_EQ(api(Json::parse(R"({"commands": [["true"]]})")),
            "commands: expected one command line per task (2), got 1");
  EXPECT_EQ(api(Json::parse(R"({"commands": [["true"], []]})")),
            "commands[1]: must not be empty (the program, then its arguments)");
  EXPECT_EQ(Call("GET", "/v1/health")->value("revision", int64_t{0}), revision);
  EXPECT_EQ((*Call("GET", "/v1/jobs"))["jobs"], Json::array());
}

// The CPU time the cgroup v1 group of run `id` used so far (cpuacct.usage,
// ns); nullopt when there is none.
std::optional<int64_t> CpuUsageNs(const std::string& id) {
  const std::map<std::string, std::string> mounts =
      executor::CgroupV1Mounts(ReadFile("/proc/mounts"));
  if (!mounts.contains("cpuacct")) return std::nullopt;
  const std::string text = ReadFile(mounts.at("cpuacct") + "/berth/task-" + id + "/cpuacct.usage");
  if (text.empty()) return std::nullopt;
  return std::stoll(text);
}

// Limits hold on a real berth-node (issue 30): a task that allocates and
// touches 300 MB (dd's buffer, filled from /dev/zero) under
// --limit-memory 64M is killed by the kernel at its limit, and its state
// says so; a busy loop under --limit-cpu 0.5 gets half a core, measured
// from its group's cpuacct.usage over a second.
TEST_F(NodeE2eTest, LimitsHoldAMemoryHogIsOomKilledAndABusyLoopGetsHalfACore) {
  StartNode("n1");
  if (const std::string why = WhyNoLimitsV1("n1"); !why.empty()) GTEST_SKIP() << why;
  CreateService("hog", 1, {"--limit-memory", "64M", "--restart-condition", "none"},
                {"dd", "if=/dev/zero", "of=/dev/null", "bs=300M", "count=1"});
  CreateService("spin", 1, {"--limit-cpu", "0.5", "--stop-grace-period", "0s"},
                {"sh", "-c", "while :; do :; done"});
  EXPECT_TRUE(Eventually([&] { return Task("hog.1").value("state", "") == "failed"; }))
      << Task("hog.1").dump();
  const std::string oom = Task("hog.1").value("message", "");
  EXPECT_TRUE(oom.starts_with("killed: out of memory (limit " + FormatBytes(64'000'000) + ")"))
      << oom;

  const std::string spin = JoinedRun("n1", "spin.1");
  ASSERT_NE(spin, "") << Task("spin.1").dump();
  const std::optional<int64_t> used_before = CpuUsageNs(spin);
  ASSERT_TRUE(used_before.has_value()) << "no cpuacct.usage for " << spin;
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the interval measured
  const std::optional<int64_t> used_after = CpuUsageNs(spin);
  const auto wall = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(used_after.has_value());
  const double cores = static_cast<double>(*used_after - *used_before) /
                       std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count();
  EXPECT_GE(cores, 0.4);
  EXPECT_LE(cores, 0.6);
  ASSERT_NE(Berth({"service", "rm", "spin"}), "");
  EXPECT_TRUE(Eventually([&] {
    return std::filesystem::exists(DataDir("n1") + "/tasks/" + spin + "/exit") &&
           TaskCgroups(spin).empty();
  }));
}

// A job's task under --limit-pids 8 cannot fork its ninth process: the
// fork fails (EAGAIN) and the task, which exits 3 on that, fails.
TEST_F(NodeE2eTest, LimitsHoldAForkBeyondAJobsPidsLimitFails) {
  StartNode("n1");
  if (const std::string why = WhyNoLimitsV1("n1"); !why.empty()) GTEST_SKIP() << why;
  const Json b = (*Call("GET", "/v1/nodes/n1"))["berth_node"];
  if (!b.value("limits_pids", false)) GTEST_SKIP() << "pids: " << b.value("limits_pids_reason", "");
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3";
  ASSERT_NE(
      Berth({"job", "submit", "forky", "--requestor", "ci", "--max-retries", "0", "--limit-pids",
             "8", "--", "/usr/bin/python3", "-c", executor::kForkUntilRefused}),
      "");
  EXPECT_TRUE(Eventually([&] {
    return Call("GET", "/v1/jobs/forky")->value("state", "") == "failed";
  })) << Call("GET", "/v1/tasks?job=forky")->dump();
  EXPECT_TRUE(Task("forky.1").value("message", "").starts_with("exit status 3"))
      << Task("forky.1").dump();
  const std::string logs = Berth({"job", "logs", "forky.1"});
  EXPECT_EQ(logs, "forked 7, then: Resource temporarily unavailable\n");
}

// A pids limit that is not a whole number from 1 to 4194304 is refused by
// berthd (400, naming the field) for a service and a job alike, changing
// nothing; the CLI refuses one that is no number before sending anything.
TEST_F(NodeE2eTest, ABadPidsLimitIsRefusedNamingTheField) {
  for (const Json& bad : {Json(0), Json(4194305), Json(-1), Json("64")}) {
    const Json task = {{"command", "true"}, {"limits", {{"pids", bad}}}};
    Result<Json> service = Call("POST", "/v1/services", Json{{"id", "web"}, {"task", task}});
    EXPECT_EQ(service.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(service.status().message().starts_with(
        "task.limits.pids: expected a whole number of processes"))
        << service.status().message();
    Result<Json> job =
        Call("POST", "/v1/jobs",
             Json{{"id", "j"}, {"requestor", "r"}, {"task", task}, {"tasks", {Json::object()}}});
    EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  Process cli({BERTH_BINARY, "job", "submit", "j", "--requestor", "r", "--limit-pids", "ten",
               "--server", "https://127.0.0.1:" + port_, "--token", token_, "--data-dir",
               dir_.path() + "/berthd", "--", "true"},
              Process::Stderr::kMerge);
  const Process::Exit exit = cli.WaitExit(kBound);
  EXPECT_TRUE(WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 2) << exit.output;
  EXPECT_NE(exit.output.find("--limit-pids 'ten': expected a whole number of processes"),
            std::string::npos)
      << exit.output;
  EXPECT_EQ(Call("GET", "/v1/services/web").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Call("GET", "/v1/jobs/j").status().code(), StatusCode::kNotFound);
}

// No cgroup is left when a supervisor is killed with SIGKILL: a task's
// berth-exec killed under a running berth-node (the node kills what is
// left in the task's groups and removes them), and one killed while its
// berth-node was down too (the node does the same once back). TearDown
// checks the third: a task that outlived its killed berth-node, whose
// berth-exec removes its groups once the task is killed.
TEST_F(NodeE2eTest, NoCgroupIsLeftWhenASupervisorOrItsNodeIsKilled) {
  StartNode("n1");
  if (const std::string why = WhyNoLimitsV1("n1"); !why.empty()) GTEST_SKIP() << why;
  const std::vector<std::string> limited = {"--limit-memory", "64M", "--restart-condition", "none"};
  for (const std::string service : {"a", "b", "c"})
    CreateService(service, 1, limited, {"sleep", "1000"});
  const std::string a = JoinedRun("n1", "a.1"), b = JoinedRun("n1", "b.1");
  ASSERT_NE(a, "");
  ASSERT_NE(b, "");
  ASSERT_NE(JoinedRun("n1", "c.1"), "");

  const auto [a_task, a_shim] = PidsOf("n1", a);
  ASSERT_EQ(::kill(a_shim, SIGKILL), 0);
  EXPECT_TRUE(Eventually([&] { return Task("a.1").value("state", "") == "failed"; }))
      << Task("a.1").dump();
  EXPECT_TRUE(Eventually([&] { return TaskCgroups(a).empty(); }));
  EXPECT_TRUE(testing_support::Ended(a_task));

  nodes_["n1"]->Kill(SIGKILL);
  const auto [b_task, b_shim] = PidsOf("n1", b);
  ASSERT_EQ(::kill(b_shim, SIGKILL), 0);
  ASSERT_TRUE(Eventually([&] { return testing_support::Ended(b_shim); }));
  EXPECT_FALSE(TaskCgroups(b).empty());  // nobody watches its task now
  StartNode("n1");
  EXPECT_TRUE(Eventually([&] { return TaskCgroups(b).empty(); }));
  EXPECT_TRUE(Eventually([&] { return testing_support::Ended(b_task); }));
}

// Issue 30's acceptance: a rebalance kills a running task on a loaned
// worker and the task starts again later, as a new run. Two nodes of one
// worker each; class land borrows both while diff has nothing to do; once
// diff waits, the spread (100 points) stays over the threshold for the
// minimum duration and the rebalance stops land's newest task on its node.
// diff's task waits for a gate, so the test sees the preempted task
// waiting; once diff's task ends, land's runs again under a new run id.
TEST_F(NodeE2eTest, ARebalanceKillsATaskOnALoanedWorkerAndItRunsAgainLater) {
  StartNode("n1");
  StartNode("n2");
  ASSERT_TRUE(Call("PATCH", "/v1/classes", Json::parse(R"({"classes": {"land": 50, "diff": 50},
                     "requestors": [["^land", "land"], ["^diff", "diff"]],
                     "rebalance": {"threshold": 10, "min_duration_s": 1}})"))
                  .ok());
  ASSERT_NE(Berth({"job", "submit", "l", "--requestor", "land-ci", "--tasks", "2", "--", "sleep",
                   "1000"}),
            "");
  auto running = [&](const std::string& job) {
    Result<Json> tasks = Call("GET", "/v1/tasks?job=" + job + "&state=running");
    return tasks.ok() ? (*tasks)["tasks"].size() : 0u;
  };
  ASSERT_TRUE(Eventually([&] { return running("l") == 2; }));
  const std::string gate = dir_.path() + "/diff-may-end";
  ASSERT_NE(Berth({"job", "submit", "d", "--requestor", "diff-ci", "--", "sh", "-c",
                   "until [ -e " + gate + " ]; do sleep 0.02; done"}),
            "");
  std::string preempted;
  ASSERT_TRUE(Eventually([&] {
    for (const char* id : {"l.1", "l.2"})
      if (Task(id).value("message", "") == "preempted by rebalance; waiting again") preempted = id;
    return !preempted.empty() && running("d") == 1;
  })) << Call("GET", "/v1/tasks?job=l")->dump();
  // Its first run was killed on its node: no process of it is left.
  auto runs = [&] {
    std::set<std::string> all;
    for (const char* node : {"n1", "n2"})
      for (const std::string& id : TaskDirs(DataDir(node), true)) all.insert(id);
    return all;
  };
  EXPECT_TRUE(Eventually([&] { return !runs().count(preempted); }));
  std::ofstream(gate) << "go\n";
  EXPECT_TRUE(Eventually([&] {
    const Json task = Task(preempted);
    return task.value("state", "") == "running" && task.value("attempt", 0) == 1;
  })) << Task(preempted).dump();
  EXPECT_TRUE(runs().count(preempted + "~1")) << preempted;
  Result<Json> diff = Call("GET", "/v1/jobs/d");
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->value("state", ""), "complete");
}

}  // namespace
}  // namespace berth
