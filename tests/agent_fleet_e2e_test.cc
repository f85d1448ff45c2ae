// berth-agents that front berth-node machines, end to end: two berth-agent
// processes, each with two berth-node processes that joined it with its
// own node token, and a berthd that places through both (--agent). Tasks
// are real processes. Heartbeats are fast (--heartbeat-period 500ms x 3):
// a killed node is down within 2 s, yet a machine loaded by a parallel test
// run does not mark live nodes down.
//
// Everything is awaited on what it waits for, polled with a bound. Every
// process started is stopped by its pid; a node's tasks (which outlive
// their berth-node by design) are killed by the pids their data directory
// records.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "api/api_client.h"
#include "process.h"
#include "store/test_dir.h"

namespace berth {
namespace {

using api::Json;
using testing_support::Eventually;
using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;

constexpr auto kBound = std::chrono::seconds(30);
const std::vector<std::string> kAgents = {"a1", "a2"};
const std::map<std::string, std::vector<std::string>> kNodesOf = {{"a1", {"n11", "n12"}},
                                                                  {"a2", {"n21", "n22"}}};

// The task runs a node's data directory holds that still run.
std::set<std::string> RunningDirs(const std::string& data_dir) {
  return testing_support::TaskDirs(data_dir, true);
}

class AgentFleetE2eTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& agent : kAgents) StartAgent(agent);
    for (const std::string& agent : kAgents)
      for (const std::string& node : kNodesOf.at(agent)) StartNode(agent, node);
    StartBerthd();
  }
  void TearDown() override {
    berthd_.reset();
    nodes_.clear();
    for (const auto& [agent, nodes] : kNodesOf)
      for (const std::string& node : nodes) testing_support::KillTasksOf(DataDir(node));
    agents_.clear();
    for (const char* group : {"/sys/fs/cgroup/memory/berth", "/sys/fs/cgroup/cpu/berth",
                              "/sys/fs/cgroup/cpuacct/berth"})
      ::rmdir(group);
  }

  std::string DataDir(const std::string& name) const { return dir_.path() + "/" + name; }

  // Starts berth-agent `id` with a fleet of its own (again on its port).
  // Both agents take berthd's one agent token: the first makes it.
  void StartAgent(const std::string& id) {
    if (id != kAgents[0] && !std::filesystem::exists(DataDir(id))) {
      std::filesystem::create_directory(DataDir(id));
      std::filesystem::copy_file(DataDir(kAgents[0]) + "/token", DataDir(id) + "/token");
    }
    // Again on the same ports, its gRPC service's too (not --port + 10,
    // which another process may hold).
    const std::string port = ports_.count(id) ? ports_[id] : "0";
    const std::string rpc_port = rpc_ports_.count(id) ? rpc_ports_[id] : "0";
    agents_[id] = std::make_unique<Process>(std::vector<std::string>{
        BERTH_AGENT_BINARY, "--id", id, "--data-dir", DataDir(id), "--port", port, "--rpc-port",
        rpc_port, "--heartbeat-period", "500ms"});
    const std::string line = agents_[id]->WaitForLine("listening on", kBound);
    ports_[id] = PortInLine(line);
    ASSERT_FALSE(ports_[id].empty()) << id << " did not start";
    const size_t grpc = line.find("gRPC on port ");
    ASSERT_NE(grpc, std::string::npos) << line;
    rpc_ports_[id] = line.substr(grpc + 13, line.find(';', grpc) - grpc - 13);
    token_ = FirstLine(DataDir(kAgents[0]) + "/token");
    const std::string join_file = DataDir(id + "-node-token");
    if (std::filesystem::exists(join_file)) return;
    Result<Json> join = AgentCall(id, "GET", "/v1/tokens/node");
    ASSERT_TRUE(join.ok()) << join.status().message();
    std::ofstream(join_file) << (*join)["token"].get<std::string>() << "\n";
    std::filesystem::permissions(
        join_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  std::unique_ptr<Process> NodeProcess(const std::string& agent, const std::string& name) {
    return std::make_unique<Process>(
        std::vector<std::string>{BERTH_NODE_BINARY, "--join", "https://127.0.0.1:" + ports_[agent],
                                 "--token-file", DataDir(agent + "-node-token"), "--data-dir",
                                 DataDir(name), "--hostname", name, "--listen", "127.0.0.1:0",
                                 "--exec", BERTH_EXEC_BINARY},
        Process::Stderr::kMerge);
  }
  void StartNode(const std::string& agent, const std::string& name) {
    auto node = NodeProcess(agent, name);
    ASSERT_NE(node->WaitForLine("joined", kBound), "") << name << " did not join " << agent;
    ASSERT_NE(node->WaitForLine("full list", kBound), "") << name << " got no assignments";
    nodes_[name] = std::move(node);
  }

  void StartBerthd() {
    std::vector<std::string> argv = {BERTHD_BINARY,
                                     "--data-dir",
                                     DataDir("berthd"),
                                     "--port",
                                     "0",
                                     "--agent-token-file",
                                     DataDir(kAgents[0]) + "/token"};
    for (const std::string& agent : kAgents)
      argv.insert(argv.end(), {"--agent", "127.0.0.1:" + ports_[agent], "--agent-ca",
                               DataDir(agent) + "/ca.pem"});
    berthd_ = std::make_unique<Process>(argv);
    berthd_port_ = PortInLine(berthd_->WaitForLine("listening on", kBound));
    ASSERT_FALSE(berthd_port_.empty()) << "berthd did not start";
    berthd_token_ = FirstLine(DataDir("berthd") + "/token");
  }

  Result<Json> Call(const std::string& method, const std::string& path,
                    const Json& body = nullptr) {
    api::ApiClient client("https://127.0.0.1:" + berthd_port_, berthd_token_, 30,
                          api::TrustIn(DataDir("berthd")));
    return client.Call(method, path, body);
  }
  Result<Json> AgentCall(const std::string& agent, const std::string& method,
                         const std::string& path, const Json& body = nullptr) {
    api::ApiClient client("https://127.0.0.1:" + ports_[agent], token_, 30,
                          api::TrustIn(DataDir(agent)));
    return client.Call(method, path, body);
  }

  void CreateService(const std::string& id, int replicas) {
    Process cli(
        {BERTH_BINARY, "service", "create", id, "--replicas", std::to_string(replicas), "--detach",
         "--restart-delay", "0s", "--server", "https://127.0.0.1:" + berthd_port_, "--token",
         berthd_token_, "--data-dir", DataDir("berthd"), "--", "sleep", "1000"},
        Process::Stderr::kMerge);
    Process::Exit exit = cli.WaitExit(kBound);
    ASSERT_EQ(exit.status, 0) << exit.output;
  }
  // The service's running tasks by node, as berthd has them.
  std::map<std::string, int> RunningByNode(const std::string& service) {
    std::map<std::string, int> by_node;
    Result<Json> tasks =
        Call("GET", "/v1/tasks?service=" + service + "&state=running&desired_state=running");
    if (!tasks.ok()) return by_node;
    for (const Json& t : (*tasks)["tasks"]) ++by_node[t.value("node", "")];
    return by_node;
  }
  static int Total(const std::map<std::string, int>& by_node) {
    int n = 0;
    for (const auto& [node, count] : by_node) n += count;
    return n;
  }
  // Every run still running on the four nodes, by node.
  std::map<std::string, std::set<std::string>> Processes() {
    std::map<std::string, std::set<std::string>> runs;
    for (const auto& [agent, nodes] : kNodesOf)
      for (const std::string& node : nodes) runs[node] = RunningDirs(DataDir(node));
    return runs;
  }
  // The tasks as berthd has them and the runs on the nodes, for a failure.
  std::string Describe() {
    std::string out;
    if (Result<Json> tasks = Call("GET", "/v1/tasks?service=web"); tasks.ok())
      for (const Json& t : (*tasks)["tasks"])
        out += t.value("id", "") + " " + t.value("node", "") + " " + t.value("state", "") + "/" +
               t.value("desired_state", "") + "\n";
    for (const auto& [node, ids] : Processes())
      for (const std::string& id : ids) out += node + ": " + id + "\n";
    return out;
  }
  static size_t Count(const std::map<std::string, std::set<std::string>>& runs) {
    size_t n = 0;
    for (const auto& [node, ids] : runs) n += ids.size();
    return n;
  }

  store::TestDir dir_;
  std::map<std::string, std::unique_ptr<Process>> agents_, nodes_;
  std::map<std::string, std::string> ports_, rpc_ports_;  // by agent id
  std::string token_;  // the agents' (and berthd's --agent-token-file)
  std::unique_ptr<Process> berthd_;
  std::string berthd_port_, berthd_token_;
};

TEST_F(AgentFleetE2eTest, ReplicasRunAsProcessesOnTheAgentsNodesAndAKilledNodesTasksMove) {
  CreateService("web", 8);
  ASSERT_TRUE(Eventually([&] { return Total(RunningByNode("web")) == 8; }));
  ASSERT_TRUE(Eventually([&] { return Count(Processes()) == 8; }));
  // Each running task is a process on the node berthd says it runs on.
  auto matches = [&] {
    for (const auto& [node, count] : RunningByNode("web"))
      if (RunningDirs(DataDir(node)).size() != static_cast<size_t>(count)) return false;
    return true;
  };
  EXPECT_TRUE(Eventually(matches)) << Describe();
  // Its output comes back through berthd, from the agent, from the node.
  Result<Json> logs = Call("GET", "/v1/tasks/web.1/logs");
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  EXPECT_TRUE((*logs)["task"].get<std::string>().starts_with("web.1.")) << *logs;
  EXPECT_TRUE(RunningByNode("web").count((*logs)["node"].get<std::string>())) << *logs;

  std::string victim;
  for (const auto& [node, count] : RunningByNode("web"))
    if (victim.empty() || count > RunningByNode("web")[victim]) victim = node;
  nodes_[victim]->Kill(SIGKILL);
  EXPECT_TRUE(Eventually([&] {
    const std::map<std::string, int> now = RunningByNode("web");
    return Total(now) == 8 && !now.count(victim);
  })) << "the tasks of "
      << victim << " were not replaced";
  size_t elsewhere = 0;
  for (const auto& [node, ids] : Processes())
    if (node != victim) elsewhere += ids.size();
  EXPECT_EQ(elsewhere, 8u);
}

TEST_F(AgentFleetE2eTest, AnAgentKilledAndRestartedRelearnsItsNodesAndBindingsAndRunsNothingTwice) {
  CreateService("web", 8);
  ASSERT_TRUE(Eventually([&] { return Total(RunningByNode("web")) == 8; }));
  ASSERT_TRUE(Eventually([&] { return Count(Processes()) == 8; }));
  const std::map<std::string, std::set<std::string>> before = Processes();
  Result<Json> held = AgentCall("a2", "GET", "/v1/agent");
  ASSERT_TRUE(held.ok());

  agents_["a2"]->Kill(SIGKILL);
  StartAgent("a2");
  // Its nodes come back to it and take their full lists.
  for (const std::string& node : kNodesOf.at("a2"))
    EXPECT_NE(nodes_[node]->WaitForLine("full list", kBound), "") << node;
  Result<Json> relearned = AgentCall("a2", "GET", "/v1/agent");
  ASSERT_TRUE(relearned.ok());
  EXPECT_EQ((*relearned)["bindings"], (*held)["bindings"]);
  EXPECT_EQ((*relearned)["nodes"], 2);
  // Nothing started again, nothing stopped: the same runs, on the same nodes.
  EXPECT_EQ(Processes(), before);
  EXPECT_EQ(Total(RunningByNode("web")), 8);
  // The restarted agent still runs what berthd asks: one replica more.
  ASSERT_TRUE(Call("PATCH", "/v1/services/web", Json{{"replicas", 9}}).ok());
  EXPECT_TRUE(Eventually([&] { return Count(Processes()) == 9; }));
}

// A job placed through the agents runs its tasks' commands on their nodes;
// a failed task runs again (a new run id on a node) as the job says; the
// job ends as its tasks did, and its output comes back through the agents.
TEST_F(AgentFleetE2eTest, AJobsTasksRunOnTheAgentsNodesAndAFailedOneIsRetried) {
  Process cli({BERTH_BINARY,
               "job",
               "submit",
               "j",
               "--requestor",
               "ci",
               "--tasks",
               "6",
               "--max-retries",
               "1",
               "--server",
               "https://127.0.0.1:" + berthd_port_,
               "--token",
               berthd_token_,
               "--data-dir",
               DataDir("berthd"),
               "--",
               "sh",
               "-c",
               "echo task {{.Index}}; [ {{.Index}} != 4 ]"},
              Process::Stderr::kMerge);
  Process::Exit submitted = cli.WaitExit(kBound);
  ASSERT_EQ(submitted.status, 0) << submitted.output;
  auto state = [&] {
    Result<Json> job = Call("GET", "/v1/jobs/j");
    return job.ok() ? job->value("state", "") : "";
  };
  ASSERT_TRUE(Eventually([&] { return state() == "failed"; }))
      << Call("GET", "/v1/tasks?job=j")->dump();
  EXPECT_EQ((*Call("GET", "/v1/jobs/j"))["states"], (Json{{"complete", 5}, {"failed", 1}}));
  const Json failed = *Call("GET", "/v1/tasks/j.4");
  EXPECT_NE(failed.value("message", "").find("exit status 1"), std::string::npos) << failed;
  EXPECT_EQ(failed.value("attempt", 0), 1);  // ran twice: its first run and one retry
  Result<Json> logs = Call("GET", "/v1/tasks/j.3/logs");
  ASSERT_TRUE(logs.ok()) << logs.status().message();
  EXPECT_NE(logs->dump().find("task 3"), std::string::npos) << *logs;
}

TEST_F(AgentFleetE2eTest, WrongTokensAndNodesThatLeftAreRefusedWithTheReason) {
  // A node with the other agent's join token does not join this one.
  Process stranger(
      {BERTH_NODE_BINARY, "--join", "https://127.0.0.1:" + ports_["a1"], "--token-file",
       DataDir("a2-node-token"), "--data-dir", DataDir("stranger"), "--hostname", "stranger",
       "--listen", "127.0.0.1:0", "--exec", BERTH_EXEC_BINARY},
      Process::Stderr::kMerge);
  Process::Exit refused = stranger.WaitExit(kBound);
  EXPECT_NE(refused.status, 0);
  // Its token carries the other agent's CA digest: it finds out before it
  // sends the token.
  EXPECT_NE(refused.output.find("is not the cluster the join token is for"), std::string::npos)
      << refused.output;

  // A commit to a node that left is a conflict that says so; to one the
  // agent never had, an error.
  nodes_["n12"]->Kill(SIGKILL);
  const Json commit = {{"task", {{"id", "late.1"}}}, {"node_id", "n12"}};
  EXPECT_TRUE(Eventually([&] {
    Result<Json> answer = AgentCall("a1", "POST", "/v1/commit", commit);
    return answer.ok() && (*answer)["outcome"] == "conflict" &&
           (*answer)["reason"] == "node 'n12' is down";
  }));
  Result<Json> unknown =
      AgentCall("a1", "POST", "/v1/commit", Json{{"task", {{"id", "late.2"}}}, {"node_id", "n99"}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ((*unknown)["outcome"], "error");
  EXPECT_NE((*unknown)["reason"].get<std::string>().find("unknown node 'n99'"), std::string::npos);
  // A bad runs query is refused with the field's name.
  Result<Json> bad = AgentCall("a1", "GET", "/v1/runs?sequence=-1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sequence"), std::string::npos);
}

}  // namespace
}  // namespace berth
