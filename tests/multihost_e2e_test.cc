// Several hosts on one machine: a berthd and two berth-nodes, each in a
// network namespace of its own (tests/netns.h), talking over a bridge by
// their IP addresses, not over loopback. A host is partitioned by setting
// its switch port down: berthd marks its node down and replaces its task
// on the other node while the cut-off process runs on; once the port is
// up again the node is ready, and berthd stops the task it replaced, so
// each replica runs exactly once.
//
// Heartbeats are fast (--heartbeat-period 200ms x 5: a node is down a
// second after its last heartbeat). Everything is awaited on what it waits
// for, polled with a bound. Every process started is stopped by its pid; a
// node's tasks (which outlive their berth-node by design) are killed by
// the pids their data directory records; every namespace is deleted, which
// is checked. Needs root (namespaces); skips with the reason otherwise.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "api/api_client.h"
#include "executor/cgroup_files.h"
#include "netns.h"
#include "process.h"
#include "store/test_dir.h"

namespace berth {
namespace {

using api::Json;
using testing_support::Ended;
using testing_support::Eventually;
using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;
using testing_support::TaskDirs;
using testing_support::TestNetwork;

constexpr auto kBound = std::chrono::seconds(30);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A berthd process and how to reach it.
struct Berthd {
  std::unique_ptr<Process> process;
  std::string url;    // https://ADDRESS:PORT
  std::string token;  // the API token
  std::string data_dir;
};

// Starts berthd inside host `host` of `net`, listening on that host's
// address, over HTTPS (its certificate names the addresses of its host's
// interfaces, which berthd reads at start inside the namespace).
Berthd LaunchBerthd(const TestNetwork& net, int host, const std::string& data_dir) {
  Berthd berthd;
  berthd.process = std::make_unique<Process>(
      Concat(net.Prefix(host),
             {BERTHD_BINARY, "--data-dir", data_dir, "--host", net.Address(host), "--port", "0",
              "--heartbeat-period", "200ms", "--heartbeat-multiplier", "5"}));
  const std::string port = PortInLine(berthd.process->WaitForLine("listening on", kBound));
  if (port.empty()) return berthd;
  berthd.url = "https://" + net.Address(host) + ":" + port;
  berthd.token = FirstLine(data_dir + "/token");
  berthd.data_dir = data_dir;
  return berthd;
}

// Starts berth-node `name` inside host `host` of `net`, joining berthd at
// `url` by IP address, its log server on the host's address; returns once
// it joined over mutual TLS (its token carries the CA's digest, which it
// checks before it sends the token) and got its assignments (nullptr when
// it did not).
std::unique_ptr<Process> LaunchNode(const TestNetwork& net, int host, const std::string& url,
                                    const std::string& token_file, const std::string& data_dir,
                                    const std::string& name) {
  auto node = std::make_unique<Process>(Concat(
      net.Prefix(host),
      {BERTH_NODE_BINARY, "--join", url, "--token-file", token_file, "--data-dir", data_dir,
       "--hostname", name, "--listen", net.Address(host) + ":0", "--exec", BERTH_EXEC_BINARY}));
  if (node->WaitForLine("mutual TLS, certificate from CA", kBound).empty()) return nullptr;
  if (node->WaitForLine("full list", kBound).empty()) return nullptr;
  return node;
}

// berth's group in each cgroup v1 hierarchy a berth-node puts tasks in.
std::vector<std::string> BerthCgroupsV1() {
  std::vector<std::string> groups;
  const std::map<std::string, std::string> mounts =
      executor::CgroupV1Mounts(ReadFile("/proc/mounts"));
  for (const char* controller : {"memory", "cpu", "cpuacct", "pids"})
    if (const auto it = mounts.find(controller); it != mounts.end())
      groups.push_back(it->second + "/berth");
  return groups;
}

class MultihostE2eTest : public testing::Test {
 protected:
  static constexpr int kHosts = 3;  // host 0: berthd; hosts 1 and 2: nodes n1 and n2

  void SetUp() override {
    const std::string why = TestNetwork::Unavailable();
    if (!why.empty()) GTEST_SKIP() << why;
    net_ = std::make_unique<TestNetwork>(kHosts);
    ASSERT_EQ(net_->error(), "");
    std::filesystem::create_directory(Marks());
    berthd_ = LaunchBerthd(*net_, 0, dir_.path() + "/berthd");
    ASSERT_NE(berthd_.url, "") << "berthd did not start";
    const Result<Json> join = Call("GET", "/v1/tokens/node");
    ASSERT_TRUE(join.ok()) << join.status().message();
    std::ofstream(TokenFile()) << (*join)["token"].get<std::string>() << "\n";
    std::filesystem::permissions(
        TokenFile(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  // The nodes are killed, then their tasks (by the pids their data
  // directories record), then berthd; then the namespaces are deleted and
  // none of this test's is left.
  void TearDown() override {
    for (auto& [name, node] : nodes_) node.reset();
    for (const auto& [name, host] : kNodes) testing_support::KillTasksOf(DataDir(name));
    berthd_.process.reset();
    // Each task's supervisor removed its cgroups as it ended.
    for (const auto& [name, host] : kNodes)
      for (const std::string& id : TaskDirs(DataDir(name), false))
        for (const std::string& group : BerthCgroupsV1())
          EXPECT_FALSE(std::filesystem::exists(group + "/task-" + id)) << group << "/task-" << id;
    for (const std::string& group : BerthCgroupsV1()) ::rmdir(group.c_str());  // only if empty
    if (net_ == nullptr) return;
    net_.reset();
    EXPECT_EQ(TestNetwork::Leftovers(), std::vector<std::string>{});
  }

  std::string Marks() const { return dir_.path() + "/marks"; }
  std::string TokenFile() const { return dir_.path() + "/node-token"; }
  std::string DataDir(const std::string& name) const { return dir_.path() + "/" + name; }

  void StartNode(const std::string& name) {
    nodes_[name] =
        LaunchNode(*net_, kNodes.at(name), berthd_.url, TokenFile(), DataDir(name), name);
    ASSERT_NE(nodes_[name], nullptr) << name << " did not join";
  }

  // The API, from inside berthd's host.
  Result<Json> Call(const std::string& method, const std::string& path,
                    const Json& body = nullptr) {
    std::optional<Result<Json>> answer;
    net_->RunIn(0, [&] {
      api::ApiClient client(berthd_.url, berthd_.token, 10, api::TrustIn(berthd_.data_dir));
      answer.emplace(client.Call(method, path, body));
    });
    if (!answer) return Status::Unavailable("cannot join berthd's network namespace");
    return *answer;
  }
  // An object's JSON, or {} when the call failed.
  Json Get(const std::string& path) {
    const Result<Json> got = Call("GET", path);
    return got.ok() ? *got : Json::object();
  }
  std::string NodeState(const std::string& node) {
    return Get("/v1/nodes/" + node).value("state", "");
  }
  // The tasks of `service` running and meant to run, by node.
  std::map<std::string, int> RunningOn(const std::string& service) {
    std::map<std::string, int> on;
    const Result<Json> tasks =
        Call("GET", "/v1/tasks?service=" + service + "&state=running&desired_state=running");
    if (tasks.ok())
      for (const Json& t : (*tasks)["tasks"]) ++on[t.value("node", "")];
    return on;
  }

  // Runs the berth CLI inside berthd's host; its output, or "" when it failed.
  std::string Berth(std::vector<std::string> args) {
    const auto dashes = std::find(args.begin(), args.end(), "--");
    args.insert(dashes, {"--server", berthd_.url, "--token", berthd_.token, "--data-dir",
                         berthd_.data_dir});
    args.insert(args.begin(), BERTH_BINARY);
    Process cli(Concat(net_->Prefix(0), args), Process::Stderr::kMerge);
    Process::Exit exit = cli.WaitExit(kBound);
    return exit.status == 0 ? exit.output : "";
  }

  // What the tasks' command left in Marks(): each run writes its own pid
  // and node to a file named by its task id, then execs sleep (so the pid
  // is the task's process).
  struct Mark {
    pid_t pid = 0;
    std::string node;
  };
  std::map<std::string, Mark> Marked() {
    std::map<std::string, Mark> marks;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(Marks(), ec)) {
      std::istringstream in(ReadFile(entry.path()));
      Mark mark;
      if (in >> mark.pid >> mark.node) marks[entry.path().filename()] = mark;
    }
    return marks;
  }
  // The runs whose process is alive, by task id.
  std::map<std::string, Mark> Alive() {
    std::map<std::string, Mark> alive;
    for (const auto& [id, mark] : Marked())
      if (!Ended(mark.pid)) alive[id] = mark;
    return alive;
  }
  std::string Describe() {
    std::string out = "marks:";
    for (const auto& [id, mark] : Marked())
      out += " " + id + "@" + mark.node + "(pid " + std::to_string(mark.pid) +
             (Ended(mark.pid) ? ", ended)" : ", alive)");
    const Result<Json> tasks = Call("GET", "/v1/tasks?service=web");
    out += "\ntasks: " + (tasks.ok() ? tasks->dump() : tasks.status().message());
    return out;
  }

  const std::map<std::string, int> kNodes = {{"n1", 1}, {"n2", 2}};
  store::TestDir dir_;
  std::unique_ptr<TestNetwork> net_;
  Berthd berthd_;
  std::map<std::string, std::unique_ptr<Process>> nodes_;
};

// The network itself: a program started through Prefix is the process the
// test holds (nsenter execs), it sees its host's address and not the
// others', and the root namespace holds none of them.
TEST_F(MultihostE2eTest, EachHostIsANamespaceReachedThroughItsPrefix) {
  Process shell(Concat(net_->Prefix(1), {"/bin/sh", "-c", "echo pid $$; exec /usr/bin/ip -o addr"}),
                Process::Stderr::kMerge);
  const pid_t pid = shell.pid();
  const Process::Exit exit = shell.WaitExit(kBound);
  ASSERT_EQ(exit.status, 0) << exit.output;
  EXPECT_NE(exit.output.find("pid " + std::to_string(pid) + "\n"), std::string::npos)
      << exit.output;
  EXPECT_NE(exit.output.find(" " + net_->Address(1) + "/24"), std::string::npos) << exit.output;
  EXPECT_EQ(exit.output.find(" " + net_->Address(0) + "/24"), std::string::npos) << exit.output;
  Process root({TestNetwork::kIp, "-o", "addr"}, Process::Stderr::kMerge);
  const Process::Exit root_exit = root.WaitExit(kBound);
  ASSERT_EQ(root_exit.status, 0) << root_exit.output;
  const std::string subnet = net_->Address(0).substr(0, net_->Address(0).rfind('.') + 1);
  EXPECT_EQ(root_exit.output.find(subnet), std::string::npos) << root_exit.output;
}

TEST_F(MultihostE2eTest, APartitionedNodeIsReplacedAndItsTaskStoppedWhenItIsBack) {
  StartNode("n1");
  StartNode("n2");
  ASSERT_EQ(Get("/v1/nodes/n1").value("address", ""), net_->Address(1));
  ASSERT_EQ(Get("/v1/nodes/n2").value("address", ""), net_->Address(2));
  EXPECT_TRUE(
      Get("/v1/nodes/n1")["berth_node"].value("endpoint", "").starts_with(net_->Address(1) + ":"));
  ASSERT_NE(Berth({"service", "create", "web", "--replicas", "2", "--detach", "--", "/bin/sh", "-c",
                   "echo $$ $BERTH_NODE_ID > " + Marks() +
                       "/$BERTH_TASK_ID; echo $BERTH_TASK_ID on $BERTH_NODE_ID; exec sleep 1000"}),
            "");
  ASSERT_TRUE(Eventually([&] {
    return RunningOn("web") == std::map<std::string, int>{{"n1", 1}, {"n2", 1}} &&
           Alive().size() == 2;
  })) << Describe();
  std::string cut_off;  // n1's task
  for (const auto& [id, mark] : Alive())
    if (mark.node == "n1") cut_off = id;
  ASSERT_NE(cut_off, "") << Describe();
  const pid_t cut_off_pid = Alive()[cut_off].pid;
  // berthd reads each task's output from its node's log server, by address.
  for (const auto& [id, mark] : Alive())
    EXPECT_EQ(Berth({"task", "logs", id}), id + " on " + mark.node + "\n");

  // n1's host is cut off: berthd marks it down and runs its task on n2,
  // while the cut-off process runs on (nothing tells it).
  ASSERT_TRUE(net_->Cut(1)) << net_->error();
  EXPECT_TRUE(Eventually([&] { return NodeState("n1") == "down"; })) << NodeState("n1");
  EXPECT_NE(nodes_["n1"]->WaitForLine("heartbeat failed", kBound), "");
  EXPECT_TRUE(Eventually([&] {
    return RunningOn("web") == std::map<std::string, int>{{"n2", 2}} && Alive().size() == 3;
  })) << Describe();
  EXPECT_FALSE(Ended(cut_off_pid));
  EXPECT_EQ(TaskDirs(DataDir("n1"), true), std::set<std::string>{cut_off});

  // Back: n1 is ready again and berthd stops the task it replaced.
  ASSERT_TRUE(net_->Restore(1)) << net_->error();
  EXPECT_TRUE(Eventually([&] { return NodeState("n1") == "ready"; })) << NodeState("n1");
  EXPECT_NE(nodes_["n1"]->WaitForLine("heartbeats reach berthd again", kBound), "");
  EXPECT_NE(nodes_["n1"]->WaitForLine("stopping task " + cut_off, kBound), "");
  EXPECT_TRUE(Eventually([&] { return Ended(cut_off_pid); })) << Describe();
  EXPECT_TRUE(Eventually([&] { return TaskDirs(DataDir("n1"), true).empty(); })) << Describe();
  const Json stopped = Get("/v1/tasks/" + cut_off);
  EXPECT_EQ(stopped.value("desired_state", ""), "shutdown") << stopped.dump();
  EXPECT_NE(stopped.value("state", ""), "running") << stopped.dump();
  EXPECT_EQ(stopped.value("message", ""),
            "stopped: node 'n1' is back and the task was replaced meanwhile")
      << stopped.dump();

  // Each replica runs exactly once: two live processes, one per slot, on n2.
  const std::map<std::string, Mark> alive = Alive();
  std::set<std::string> slots;
  for (const auto& [id, mark] : alive) {
    slots.insert(id.substr(0, id.rfind('.')));
    EXPECT_EQ(mark.node, "n2") << id;
  }
  EXPECT_EQ(alive.size(), 2u) << Describe();
  EXPECT_EQ(slots, (std::set<std::string>{"web.1", "web.2"})) << Describe();
  EXPECT_EQ(RunningOn("web"), (std::map<std::string, int>{{"n2", 2}})) << Describe();
  EXPECT_EQ(TaskDirs(DataDir("n2"), true).size(), 2u);
  for (const auto& [id, mark] : alive) EXPECT_EQ(Berth({"task", "logs", id}), id + " on n2\n");
}

}  // namespace
}  // namespace berth
