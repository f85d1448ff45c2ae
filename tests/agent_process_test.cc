// Scheduler instances reaching berth-agent processes over HTTP: placements
// go on when one agent is killed mid-run, the tasks it had not confirmed are
// placed elsewhere, and every task ends exactly once. Then the same through
// berthd (--agent): its control loop places services on the agents.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "api/agent_rpc_client.h"
#include "api/api_client.h"
#include "api/http_agent_transport.h"
#include "process.h"
#include "store/test_dir.h"
#include "threephase/scheduler_instance.h"
#include "tls/certificate.h"

namespace berth {
namespace {

using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;

class Agent {
 public:
  Agent(const std::string& id, int nodes, const std::string& data_dir)
      : data_dir_(data_dir),
        process_({BERTH_AGENT_BINARY, "--id", id, "--simulate", std::to_string(nodes), "--port",
                  "0", "--data-dir", data_dir}) {
    const std::string port =
        PortInLine(process_.WaitForLine("listening on", std::chrono::seconds(30)));
    if (!port.empty()) address_ = "127.0.0.1:" + port;
    token_ = FirstLine(data_dir + "/token");
  }
  std::unique_ptr<api::HttpAgentTransport> Connect(const std::string& token) const {
    Result<std::unique_ptr<api::HttpAgentTransport>> t =
        api::HttpAgentTransport::Connect(address_, token, trust());
    return t.ok() ? std::move(*t) : nullptr;
  }
  const std::string& token() const { return token_; }
  // The agent's CA bundle (its data directory's ca.pem).
  std::string trust() const { return api::TrustIn(data_dir_).trust_pem; }
  // A client of the agent's API, over HTTPS.
  api::ApiClient Client() const { return api::ApiClient(address_, token_, 30, {"", "", trust()}); }
  const std::string& address() const { return address_; }
  // "127.0.0.1:PORT" of its gRPC service (GET /v1/agent's rpc_port).
  std::string RpcAddress() const {
    Result<api::Json> about = Client().Call("GET", "/v1/agent");
    return about.ok() ? "127.0.0.1:" + std::to_string(about->value("rpc_port", 0)) : "";
  }
  void Kill() { process_.Kill(SIGKILL); }

 private:
  std::string data_dir_;
  Process process_;
  std::string address_, token_;
};

agent::PlacementTask Task(int i) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations = {500, 256LL << 20, {}};
  return {"t" + std::to_string(i), 0, spec, {}, {}, {}};
}

TEST(AgentProcess, AWrongTokenIsRefused) {
  store::TestDir dir;
  Agent agent("a", 10, dir.path() + "/a");
  EXPECT_NE(agent.Connect(agent.token()), nullptr);
  EXPECT_EQ(agent.Connect("wrong"), nullptr);
}

// berthd given another CA than the agent's (a wrong --agent-ca) is refused
// at the handshake, and says so in OpenSSL's words.
TEST(AgentProcess, AnotherCaThanTheAgentsIsRefusedWithTheReason) {
  store::TestDir dir;
  Agent agent("a", 10, dir.path() + "/a");
  Agent other("b", 10, dir.path() + "/b");
  Result<std::unique_ptr<api::HttpAgentTransport>> t =
      api::HttpAgentTransport::Connect(agent.address(), agent.token(), other.trust());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("does not verify against the agent's CA given (--agent-ca): "
                                      "unable to get local issuer certificate"),
            std::string::npos)
      << t.status().message();
}

// Over TLS the agent offers its gRPC service and the transport takes it:
// several tasks' samples in one call, answered in order; a wrong token and
// a malformed payload are refused with why, and change nothing.
TEST(AgentProcess, CallsGoOverTheAgentsGrpcServiceWithSeveralSamplesInOneCall) {
  store::TestDir dir;
  Agent agent("a", 50, dir.path() + "/a");
  std::unique_ptr<api::HttpAgentTransport> t = agent.Connect(agent.token());
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->uses_rpc());
  std::vector<agent::SampleRequest> requests;
  for (int i = 0; i < 3; ++i) requests.push_back({Task(i), 1000, std::chrono::seconds(1), ""});
  auto huge = std::make_shared<TaskSpec>(*requests[1].task.spec);
  huge->reservations.milli_cpu = 1'000'000'000;
  requests[1].task.spec = huge;
  std::vector<Result<agent::SampleResponse>> answers =
      t->SampleMany(requests, std::chrono::seconds(5));
  ASSERT_EQ(answers.size(), 3u);
  for (const auto& answer : answers) ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_EQ(answers[0]->nodes.size(), 5u);  // 10% of 50
  EXPECT_TRUE(answers[1]->nodes.empty());   // the one that fits nowhere
  EXPECT_EQ(answers[2]->nodes.size(), 5u);
  EXPECT_EQ(answers[0]->nodes[0].agent_id, "a");

  api::AgentRpcClient wrong("a", agent.RpcAddress(), "wrong", agent.trust());
  Result<api::Json> refused = wrong.Call(api::AgentRpcClient::Method::kBindings,
                                         api::Json::object(), std::chrono::seconds(5), 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("a missing or wrong agent token"), std::string::npos)
      << refused.status().message();
  api::AgentRpcClient right("a", agent.RpcAddress(), agent.token(), agent.trust());
  Result<api::Json> malformed = right.Call(api::AgentRpcClient::Method::kCommit,
                                           api::Json{{"task", 1}}, std::chrono::seconds(5), 0);
  ASSERT_FALSE(malformed.ok());
  EXPECT_NE(malformed.status().message().find("task"), std::string::npos)
      << malformed.status().message();
  Result<std::vector<std::string>> bound = t->Bindings(std::chrono::seconds(5));
  ASSERT_TRUE(bound.ok());
  EXPECT_TRUE(bound->empty());
}

// A berthd leader's calls carry its epoch; once a newer leader has called,
// the deposed one's commits and releases are refused and change nothing.
TEST(AgentProcess, CallsOfAnOlderLeaderEpochAreRefused) {
  store::TestDir dir;
  Agent agent("a", 10, dir.path() + "/a");
  std::unique_ptr<api::HttpAgentTransport> old_leader = agent.Connect(agent.token());
  std::unique_ptr<api::HttpAgentTransport> new_leader = agent.Connect(agent.token());
  ASSERT_TRUE(old_leader && new_leader);
  old_leader->set_epoch(5);
  new_leader->set_epoch(9);
  agent::CommitRequest commit;
  commit.task = Task(1);
  Result<std::vector<std::string>> nodes =
      new_leader->Eligible(*commit.task.spec, std::chrono::seconds(5));
  ASSERT_TRUE(nodes.ok() && !nodes->empty());
  commit.node_id = nodes->front();
  ASSERT_TRUE(old_leader->Bindings(std::chrono::seconds(5)).ok());
  Result<agent::CommitResponse> bound_now = new_leader->Commit(commit, std::chrono::seconds(5));
  ASSERT_TRUE(bound_now.ok()) << bound_now.status().message();
  ASSERT_EQ(bound_now->outcome, agent::CommitOutcome::kBound);
  commit.task = Task(2);
  Result<agent::CommitResponse> stale = old_leader->Commit(commit, std::chrono::seconds(5));
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.status().message().find("epoch 9 has taken over; epoch 5 is stale"),
            std::string::npos)
      << stale.status().message();
  EXPECT_FALSE(old_leader->Release({"t1"}, std::chrono::seconds(5)).ok());
  Result<std::vector<std::string>> bound = new_leader->Bindings(std::chrono::seconds(5));
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(*bound, std::vector<std::string>{"t1"});
}

TEST(AgentProcess, ANodesFileWithARepeatedIdIsRefusedWithTheReason) {
  store::TestDir dir;
  const std::string nodes = dir.path() + "/nodes.yaml";
  std::ofstream(nodes) << "nodes:\n- {id: n1}\n- {id: n2}\n- {id: n1}\n";
  // Through a shell, so the message on standard error reaches the pipe.
  Process agent({"/bin/sh", "-c",
                 std::string(BERTH_AGENT_BINARY) + " --nodes " + nodes + " --data-dir " +
                     dir.path() + "/data 2>&1"});
  EXPECT_EQ(agent.WaitForLine("berth-agent:", std::chrono::seconds(30)),
            "berth-agent: nodes[2]: node id 'n1' is used twice");
  EXPECT_EQ(agent.WaitForLine("\n", std::chrono::seconds(30)), "");  // "": it exited
  const int status = agent.Kill(SIGKILL);                            // reaps it
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

TEST(AgentProcess, PlacementsGoOnWhenAnAgentIsKilled) {
  store::TestDir dir;
  Agent doomed("doomed", 40, dir.path() + "/a"), survivor("survivor", 400, dir.path() + "/b");
  std::unique_ptr<api::HttpAgentTransport> a = doomed.Connect(doomed.token());
  std::unique_ptr<api::HttpAgentTransport> b = survivor.Connect(survivor.token());
  ASSERT_TRUE(a && b);
  std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, int> outcomes;  // task -> outcomes seen
  std::map<std::string, int> bound_on;  // agent -> tasks bound there
  threephase::SchedulerOptions options;
  options.cluster_percent = 100;  // ask both agents every time
  options.node_basis_points = 1000;
  options.request_timeout = std::chrono::milliseconds(500);
  threephase::SchedulerInstance instance({a.get(), b.get()}, options,
                                         [&](const threephase::TaskOutcome& o) {
                                           std::lock_guard lock(mu);
                                           ++outcomes[o.task_id];
                                           if (o.bound) ++bound_on[o.agent_id];
                                           changed.notify_all();
                                         });
  instance.Start();
  constexpr int kTasks = 600;
  for (int i = 0; i < kTasks; ++i) instance.Submit(Task(i));
  {
    // Kill the first agent once it holds some tasks and work is still going on.
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        changed.wait_for(lock, std::chrono::seconds(60), [&] { return bound_on["doomed"] >= 10; }));
  }
  doomed.Kill();
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(120)));
  instance.Stop();
  std::lock_guard lock(mu);
  ASSERT_EQ(outcomes.size(), static_cast<size_t>(kTasks));
  for (const auto& [task, count] : outcomes) EXPECT_EQ(count, 1) << task;
  EXPECT_EQ(bound_on["doomed"] + bound_on["survivor"], kTasks);  // none failed, none lost
  EXPECT_LT(bound_on["doomed"], kTasks / 2);  // it died early; the rest went to the survivor
  EXPECT_GT(instance.counters().sample_errors.load(), 0u);  // the dead agent was noticed
}

// Tasks by the agent berthd says holds them; every task must be running.
std::map<std::string, int> RunningByAgent(api::ApiClient& client, size_t expected) {
  std::map<std::string, int> by_agent;
  Result<api::Json> tasks = client.Call("GET", "/v1/tasks");
  EXPECT_TRUE(tasks.ok()) << tasks.status().message();
  if (!tasks.ok()) return by_agent;
  EXPECT_EQ((*tasks)["tasks"].size(), expected);
  for (const api::Json& t : (*tasks)["tasks"]) {
    EXPECT_EQ(t["state"], "running") << t.dump();
    ++by_agent[t.value("agent", "")];
  }
  return by_agent;
}

TEST(AgentProcess, BerthdPlacesThroughAgentsAndGoesOnWhenOneIsKilled) {
  store::TestDir dir;
  // One token for both (berthd --agent-token-file); a data directory, and so
  // a CA, each.
  Agent doomed("doomed", 40, dir.path() + "/doomed");
  std::filesystem::create_directory(dir.path() + "/survivor");
  std::filesystem::copy_file(dir.path() + "/doomed/token", dir.path() + "/survivor/token");
  Agent survivor("survivor", 400, dir.path() + "/survivor");
  ASSERT_FALSE(doomed.address().empty() || survivor.address().empty());
  Process berthd({BERTHD_BINARY, "--data-dir", dir.path() + "/berthd", "--port", "0", "--agent",
                  doomed.address(), "--agent", survivor.address(), "--agent-token-file",
                  dir.path() + "/doomed/token", "--agent-ca", dir.path() + "/doomed/ca.pem",
                  "--agent-ca", dir.path() + "/survivor/ca.pem", "--batch-quiet-ms", "5",
                  "--batch-max-ms", "20"});
  const std::string port = PortInLine(berthd.WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(port.empty());
  api::ApiClient client("https://127.0.0.1:" + port, FirstLine(dir.path() + "/berthd/token"), 30,
                        api::TrustIn(dir.path() + "/berthd"));
  const api::Json service = {{"id", "web"},
                             {"replicas", 20},
                             {"task", {{"resources", {{"cpu", "0.5"}, {"memory", "256Mi"}}}}}};
  ASSERT_TRUE(client.Call("POST", "/v1/services", service).ok());
  const std::string settled = "/v1/health?wait=settled&timeout=120";
  ASSERT_TRUE(client.Call("GET", settled).ok());
  std::map<std::string, int> before = RunningByAgent(client, 20);
  EXPECT_EQ(before["doomed"] + before["survivor"], 20);

  // Kill one agent while a scale-up is being placed.
  ASSERT_TRUE(client.Call("PATCH", "/v1/services/web", api::Json{{"replicas", 300}}).ok());
  doomed.Kill();
  ASSERT_TRUE(client.Call("GET", settled).ok());
  std::map<std::string, int> after = RunningByAgent(client, 300);
  EXPECT_EQ(after["doomed"] + after["survivor"], 300);     // none lost, none failed
  EXPECT_GT(after["survivor"], before["survivor"] + 140);  // at least half the new ones

  // The survivor's bindings are exactly the tasks berthd says it holds, and
  // scaling down gives them back.
  api::ApiClient agent_client = survivor.Client();
  EXPECT_EQ((*agent_client.Call("GET", "/v1/agent"))["bindings"], after["survivor"]);
  ASSERT_TRUE(client.Call("PATCH", "/v1/services/web", api::Json{{"replicas", 0}}).ok());
  ASSERT_TRUE(client.Call("GET", settled).ok());
  EXPECT_EQ((*agent_client.Call("GET", "/v1/agent"))["bindings"], 0);
}

// An agent started with --manager-ca (berthd's ca.pem) serves the agent
// token only with berthd's certificate: berthd places on it, over gRPC and
// HTTPS; the token alone is refused on both.
TEST(AgentProcess, AnAgentWithBerthdsCaServesTheTokenOnlyWithBerthdsCertificate) {
  store::TestDir dir;
  const std::string berthd_dir = dir.path() + "/berthd";
  {  // berthd's first start makes its CA, which the agent is given
    Process first({BERTHD_BINARY, "--data-dir", berthd_dir, "--port", "0"});
    ASSERT_FALSE(first.WaitForLine("listening on", std::chrono::seconds(30)).empty());
  }
  Process agent_process({BERTH_AGENT_BINARY, "--id", "m", "--simulate", "20", "--port", "0",
                         "--data-dir", dir.path() + "/agent", "--manager-ca",
                         berthd_dir + "/ca.pem"});
  const std::string agent_port =
      PortInLine(agent_process.WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(agent_port.empty());
  const std::string address = "127.0.0.1:" + agent_port;
  const std::string token = FirstLine(dir.path() + "/agent/token");
  const std::string agent_trust = api::TrustIn(dir.path() + "/agent").trust_pem;

  Result<std::unique_ptr<api::HttpAgentTransport>> anonymous =
      api::HttpAgentTransport::Connect(address, token, agent_trust);
  ASSERT_FALSE(anonymous.ok());
  EXPECT_NE(anonymous.status().message().find("403: this token must come with a certificate of "
                                              "role manager"),
            std::string::npos)
      << anonymous.status().message();
  const api::AgentClientIdentity berthd_identity{berthd_dir + "/server-cert.pem",
                                                 berthd_dir + "/server-key.pem"};
  Result<std::unique_ptr<api::HttpAgentTransport>> as_berthd =
      api::HttpAgentTransport::Connect(address, token, agent_trust, berthd_identity);
  ASSERT_TRUE(as_berthd.ok()) << as_berthd.status().message();
  ASSERT_TRUE((*as_berthd)->uses_rpc());
  Result<api::Json> about = api::ApiClient(address, token, 30, berthd_identity.Load(agent_trust))
                                .Call("GET", "/v1/agent");
  ASSERT_TRUE(about.ok()) << about.status().message();
  const std::string rpc = "127.0.0.1:" + std::to_string(about->value("rpc_port", 0));
  api::AgentRpcClient token_only("m", rpc, token, agent_trust);
  EXPECT_FALSE(token_only
                   .Call(api::AgentRpcClient::Method::kBindings, api::Json::object(),
                         std::chrono::seconds(5), 0)
                   .ok());

  Process berthd({BERTHD_BINARY, "--data-dir", berthd_dir, "--port", "0", "--agent", address,
                  "--agent-token-file", dir.path() + "/agent/token", "--agent-ca",
                  dir.path() + "/agent/ca.pem", "--batch-quiet-ms", "5", "--batch-max-ms", "20"});
  const std::string port = PortInLine(berthd.WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(port.empty());
  api::ApiClient client("https://127.0.0.1:" + port, FirstLine(berthd_dir + "/token"), 30,
                        api::TrustIn(berthd_dir));
  ASSERT_TRUE(
      client
          .Call("POST", "/v1/services",
                api::Json{
                    {"id", "web"}, {"replicas", 5}, {"task", {{"resources", {{"cpu", "0.5"}}}}}})
          .ok());
  ASSERT_TRUE(client.Call("GET", "/v1/health?wait=settled&timeout=120").ok());
  EXPECT_EQ(RunningByAgent(client, 5)["m"], 5);

  // A node of berthd's cluster: its certificate is of the same CA, but its
  // role is not berthd's.
  Result<api::Json> join = client.Call("GET", "/v1/tokens/node");
  ASSERT_TRUE(join.ok());
  const tls::KeyAndCsr csr = tls::NewKeyAndCsr("n1").value();
  Result<api::Json> joined =
      api::ApiClient("https://127.0.0.1:" + port, (*join)["token"], 30,
                     {"", "", api::TrustIn(berthd_dir).trust_pem})
          .Call("POST", "/v1/node/register",
                api::Json{{"hostname", "n1"}, {"machine", "m-n1"}, {"csr", csr.csr_pem}});
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  const api::AgentClientIdentity node{dir.path() + "/node.pem", dir.path() + "/node-key.pem"};
  std::ofstream(node.cert_file) << (*joined)["certificate"].get<std::string>();
  std::ofstream(node.key_file) << csr.key_pem;
  Result<api::Json> as_node = api::AgentRpcClient("m", rpc, token, agent_trust, node)
                                  .Call(api::AgentRpcClient::Method::kBindings, api::Json::object(),
                                        std::chrono::seconds(5), 0);
  ASSERT_FALSE(as_node.ok());
  EXPECT_NE(as_node.status().message().find("berthd's certificate (role manager)"),
            std::string::npos)
      << as_node.status().message();
}

// berthd started with one agent: a binding that agent holds for a task
// berthd never stored (as after a crash between bind and store) is released
// at start; a global service gets one task on each agent node its
// constraint admits; a restarted berthd keeps the stored tasks' bindings.
TEST(AgentProcess, BerthdRunsGlobalServicesOnAgentNodesAndReleasesStrayBindings) {
  store::TestDir dir;
  Agent solo("solo", 10, dir.path() + "/agent");  // nodes 7, 8 and 9 are edge nodes
  ASSERT_FALSE(solo.address().empty());
  api::ApiClient agent_client = solo.Client();
  const api::Json ghost = {{"task", {{"id", "ghost"}}}, {"node_index", 0}, {"node_id", "solo-n0"}};
  ASSERT_EQ((*agent_client.Call("POST", "/v1/commit", ghost))["outcome"], "bound");
  auto start_berthd = [&] {
    return std::make_unique<Process>(std::vector<std::string>{
        BERTHD_BINARY, "--data-dir", dir.path() + "/berthd", "--port", "0", "--agent",
        solo.address(), "--agent-token-file", dir.path() + "/agent/token", "--agent-ca",
        dir.path() + "/agent/ca.pem", "--batch-quiet-ms", "5", "--batch-max-ms", "20"});
  };
  std::unique_ptr<Process> berthd = start_berthd();
  std::string port = PortInLine(berthd->WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(port.empty());
  auto client = std::make_unique<api::ApiClient>("https://127.0.0.1:" + port,
                                                 FirstLine(dir.path() + "/berthd/token"), 30,
                                                 api::TrustIn(dir.path() + "/berthd"));
  const std::string settled = "/v1/health?wait=settled&timeout=60";
  ASSERT_TRUE(client->Call("GET", settled).ok());
  EXPECT_EQ((*agent_client.Call("GET", "/v1/bindings"))["tasks"], api::Json::array());

  const api::Json edge = {
      {"id", "edge"},
      {"mode", "global"},
      {"task", {{"constraints", api::Json::array({"node.labels.battery-capacity==4000"})}}}};
  ASSERT_TRUE(client->Call("POST", "/v1/services", edge).ok());
  ASSERT_TRUE(client->Call("GET", settled).ok());
  std::map<std::string, int> running = RunningByAgent(*client, 3);
  EXPECT_EQ(running["solo"], 3);
  // One task per eligible node, each bound under its id.
  api::Json bound = api::Json::array(), names = api::Json::array();
  const api::Json edge_tasks = (*client->Call("GET", "/v1/tasks?service=edge"))["tasks"];
  for (const api::Json& t : edge_tasks) {
    bound.push_back(t["id"]);
    names.push_back(t["name"]);
  }
  EXPECT_EQ(names, (api::Json{"edge.solo-n7", "edge.solo-n8", "edge.solo-n9"}));
  EXPECT_EQ((*agent_client.Call("GET", "/v1/bindings"))["tasks"], bound);

  berthd->Kill(SIGKILL);
  berthd = start_berthd();
  port = PortInLine(berthd->WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(port.empty());
  client = std::make_unique<api::ApiClient>("https://127.0.0.1:" + port,
                                            FirstLine(dir.path() + "/berthd/token"), 30,
                                            api::TrustIn(dir.path() + "/berthd"));
  ASSERT_TRUE(client->Call("GET", settled).ok());
  RunningByAgent(*client, 3);
  EXPECT_EQ((*agent_client.Call("GET", "/v1/bindings"))["tasks"], bound);
}

// Behind an agent, nodes are still berthd's to show: `GET /v1/nodes` lists
// the agent's nodes after berthd's own (each with its agent and what is
// bound to it), `GET /v1/nodes/ID` finds one, and berthd's start log
// names the agents it places through.
TEST(AgentProcess, BerthdListsTheNodesOfItsAgents) {
  store::TestDir dir;
  Agent solo("solo", 3, dir.path() + "/agent");
  ASSERT_FALSE(solo.address().empty());
  Process berthd({BERTHD_BINARY, "--data-dir", dir.path() + "/berthd", "--port", "0", "--agent",
                  solo.address(), "--agent-token-file", dir.path() + "/agent/token", "--agent-ca",
                  dir.path() + "/agent/ca.pem", "--batch-quiet-ms", "5", "--batch-max-ms", "20"});
  const std::string port = PortInLine(berthd.WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(port.empty());
  EXPECT_NE(berthd.WaitForLine("berthd: placing through 1 agent: solo (" + solo.address() + ")",
                               std::chrono::seconds(30)),
            "");
  api::ApiClient client("https://127.0.0.1:" + port, FirstLine(dir.path() + "/berthd/token"), 30,
                        api::TrustIn(dir.path() + "/berthd"));
  ASSERT_TRUE(client.Call("POST", "/v1/services", {{"id", "web"}, {"replicas", 2}}).ok());
  ASSERT_TRUE(client.Call("GET", "/v1/health?wait=settled&timeout=60").ok());
  RunningByAgent(client, 2);
  Result<api::Json> listed = client.Call("GET", "/v1/nodes");
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  std::vector<std::string> ids;
  int64_t bound = 0;
  for (const api::Json& n : (*listed)["nodes"]) {
    ids.push_back(n["id"]);
    EXPECT_EQ(n["agent"], "solo") << n;
    EXPECT_EQ(n["state"], "ready") << n;
    bound += n["tasks"].get<int64_t>();
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"solo-n0", "solo-n1", "solo-n2"}));
  EXPECT_EQ(bound, 2);
  EXPECT_FALSE(listed->contains("unreachable"));
  Result<api::Json> one = client.Call("GET", "/v1/nodes/solo-n1");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ((*one)["agent"], "solo");
  EXPECT_EQ(client.Call("GET", "/v1/nodes/nope").status().code(), StatusCode::kNotFound);
  // An agent that stopped answering is named; berthd's own list goes on.
  solo.Kill();
  Result<api::Json> without = client.Call("GET", "/v1/nodes");
  ASSERT_TRUE(without.ok()) << without.status().message();
  EXPECT_EQ((*without)["nodes"], api::Json::array());
  ASSERT_EQ((*without)["unreachable"].size(), 1u) << *without;
  EXPECT_EQ((*without)["unreachable"][0]["agent"], "solo");
}

}  // namespace
}  // namespace berth
