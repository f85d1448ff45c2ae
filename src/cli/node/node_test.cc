// `berth node`'s simple verbs: the node table, and the request of rm.
#include "cli/node/node.h"

#include <httplib.h>

#include <thread>
#include <tuple>

#include "cli/cli_test_support.h"
#include "tls/certificate.h"

namespace berth::cli {
namespace {

// node ls printed a berth-node's memory in bytes (25276063744) beside
// "1Ti", and had neither the hostname nor a status message.
TEST_F(ClientCommandsTest, NodeLsShowsHostnamesOneMemoryUnitAndStatusMessages) {
  ASSERT_EQ(
      Run({"node", "add", "sim-1", "--cpu", "500m", "--memory", "1Ti", "--label", "az=a"}).status,
      0);
  // A machine joins as berth-node does, registering its bytes and CPUs as numbers.
  api::ApiClient join = Api(ApiGet("/v1/tokens/node")["token"].get<std::string>());
  // Each registration carries a CSR, as berth-node's does.
  auto with_csr = [](Json body) {
    body["csr"] = tls::NewKeyAndCsr(body["hostname"]).value().csr_pem;
    return body;
  };
  Result<Json> joined = join.Call("POST", "/v1/node/register", with_csr(Json::parse(R"({
          "hostname": "m1", "machine": "a0b1c2d3", "version": "0.1.0", "endpoint": "127.0.0.1:1",
          "resources": {"cpu": 2, "memory": 25276063744},
          "limits": {"enforced": false, "reason": "cgroup v1: limits are not enforced"}})")));
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(30)));  // TASKS: the loop's counts
  Outcome ls = Run({"node", "ls"});
  ASSERT_EQ(ls.status, 0) << ls.err;
  EXPECT_EQ(ls.out,
            "ID     HOSTNAME  STATE  AVAILABILITY  TASKS  CPU  MEMORY  LABELS      MESSAGE\n"
            "m1     m1        ready  active        0      2    23.5Gi  {}          cgroup v1: "
            "limits are not enforced\n"
            "sim-1  -         ready  active        0      0.5  1Ti     {\"az\":\"a\"}  \n");
  Outcome inspect = Run({"node", "inspect", "m1"});
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("Resources:      cpu 2, memory 23.5Gi\n"), std::string::npos)
      << inspect.out;
  EXPECT_NE(inspect.out.find("Limits:         NOT enforced: cgroup v1: limits are not enforced "
                             "(tasks with limits are not placed here)\n"),
            std::string::npos)
      << inspect.out;
  // A machine whose cgroup v1 controllers hold the limits.
  ASSERT_TRUE(join.Call("POST", "/v1/node/register", with_csr(Json::parse(R"({
          "hostname": "m2", "machine": "a0b1c2d4", "version": "0.1.0", "endpoint": "127.0.0.1:2",
          "resources": {"cpu": 2, "memory": 25276063744},
          "limits": {"enforced": true, "reason": "", "cgroup": "v1"}})")))
                  .ok());
  inspect = Run({"node", "inspect", "m2"});
  EXPECT_NE(inspect.out.find("Limits:         enforced: cpu, memory (cgroup v1); pids NOT "
                             "enforced (tasks with a pids limit are not placed here)\n"),
            std::string::npos)
      << inspect.out;
  // And its pids controller too, or not, saying why.
  const std::tuple<const char*, const char*, const char*> pids_cases[] = {
      {"m3", R"("pids": true)", "enforced: cpu, memory, pids (cgroup v1)\n"},
      {"m4", R"("pids": false, "pids_reason": "no pids controller")",
       "enforced: cpu, memory (cgroup v1); pids NOT enforced: no pids controller (tasks with a "
       "pids limit are not placed here)\n"}};
  for (const auto& [name, pids, line] : pids_cases) {
    ASSERT_TRUE(
        join.Call("POST", "/v1/node/register",
                  with_csr(Json::parse(std::string(R"({"hostname": ")") + name +
                                       R"(", "machine": "m-)" + name + R"(", "version": "0.1.0",
          "endpoint": "127.0.0.1:3", "limits": {"enforced": true, "cgroup": "v1", )" +
                                       pids + "}}")))
            .ok())
        << name;
    inspect = Run({"node", "inspect", name});
    EXPECT_NE(inspect.out.find(std::string("Limits:         ") + line), std::string::npos)
        << inspect.out;
  }
}

TEST_F(ClientCommandsTest, NodeAddDrainAndRm) {
  Outcome bad = Run({"node", "add", "n1", "--label", "az"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "berth: --label 'az': expected KEY=VALUE\n");
  ASSERT_EQ(Run({"node", "add", "n1", "--hostname", "h1", "--memory", "512Mi"}).status, 0);
  Outcome drained = Run({"node", "drain", "n1"});
  ASSERT_EQ(drained.status, 0) << drained.err;
  EXPECT_NE(drained.out.find("n1  h1        ready  drain         -      -    512Mi   {}"),
            std::string::npos)
      << drained.out;
  Outcome removed = Run({"node", "rm", "n1", "--force"});  // berthd keeps a ready node without
  ASSERT_EQ(removed.status, 0) << removed.err;
  EXPECT_EQ(removed.out, "removed n1\n");
}

// node rm -f asks berthd to remove a node even if it is ready: DELETE
// /v1/nodes/{id}?force=true. A stand-in for berthd records the requests.
TEST(NodeRm, ForceIsSentAsTheForceQuery) {
  httplib::Server server;
  std::vector<std::string> requests;
  server.Delete(R"(/v1/nodes/([^/]+))", [&](const httplib::Request& r, httplib::Response& res) {
    requests.push_back(r.method + " " + r.path +
                       (r.has_param("force") ? "?force=" + r.get_param_value("force") : ""));
    res.set_content(Json{{"removed", r.matches[1].str()}}.dump(), "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  const std::vector<std::string> to = {"--server", "http://127.0.0.1:" + std::to_string(port),
                                       "--token", "t"};
  std::vector<Outcome> outcomes;
  for (std::vector<std::string> args : {std::vector<std::string>{"node", "rm", "n1", "-f"},
                                        {"node", "rm", "n2", "--force"},
                                        {"node", "rm", "n3"}}) {
    args.insert(args.end(), to.begin(), to.end());
    outcomes.push_back(Berth(args));
  }
  server.stop();
  serving.join();
  for (const Outcome& o : outcomes) EXPECT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(outcomes[0].out, "removed n1\n");
  EXPECT_EQ(requests,
            (std::vector<std::string>{"DELETE /v1/nodes/n1?force=true",
                                      "DELETE /v1/nodes/n2?force=true", "DELETE /v1/nodes/n3"}));
}

}  // namespace
}  // namespace berth::cli
