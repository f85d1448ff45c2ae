// berthd's API end to end on loopback: authentication, error bodies, body
// limits, and state that survives a restart.
#include <cstring>
#include <sstream>

#include "daemon/daemon_test_support.h"

namespace berth::daemon {
namespace {

using api::Json;

TEST_F(DaemonTest, MissingOrWrongTokensAre401AndCounted) {
  std::unique_ptr<httplib::Client> client = NewClient();
  httplib::Client& anonymous = *client;
  httplib::Result missing = anonymous.Get("/v1/nodes");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(Json::parse(missing->body)["error"]["message"], "missing bearer token");
  EXPECT_EQ(Json::parse(missing->body)["error"]["code"], "unauthorized");
  anonymous.set_bearer_token_auth("not-the-token");
  httplib::Result wrong = anonymous.Post("/v1/nodes", R"({"id": "n1"})", "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(Json::parse(wrong->body)["error"]["message"], "wrong bearer token");
  EXPECT_EQ(anonymous.Get("/metrics")->status, 401);
  EXPECT_EQ(Metric("berth_http_unauthorized_total"), "3");
  EXPECT_EQ(Call("GET", "/v1/nodes").second["nodes"].size(), 0u);  // nothing registered
}

// /metrics is Prometheus's text format: every sample's name was declared
// by a HELP and a TYPE line, every value is a number, a histogram's +Inf
// bucket is its count; requests are timed by method, route (its
// pattern) and status, passes and commits as histograms in seconds.
TEST_F(DaemonTest, MetricsFollowPrometheusConventions) {
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "n1"})").first, 201);
  ASSERT_EQ(Call("GET", "/v1/nodes/n1").first, 200);
  ASSERT_EQ(Call("GET", "/v1/nodes/none").first, 404);
  ASSERT_EQ(Call("POST", "/v1/services", R"({"id": "web", "replicas": 1})").first, 201);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  httplib::Result r = client_->Get("/metrics");
  ASSERT_TRUE(r);
  std::map<std::string, std::string> types;
  std::map<std::string, double> samples;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t space = line.find(' ', 7);
      types[line.substr(7, space - 7)] = line.substr(space + 1);
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0) continue;
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::string sample = line.substr(0, space);
    std::string name = sample.substr(0, sample.find('{'));
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!types.contains(name) && name.ends_with(suffix))
        name = name.substr(0, name.size() - std::strlen(suffix));
    EXPECT_TRUE(types.contains(name)) << line;
    char* end = nullptr;
    samples[sample] = std::strtod(line.c_str() + space + 1, &end);
    EXPECT_EQ(*end, '\0') << line;
  }
  EXPECT_EQ(types["berth_control_pass_duration_seconds"], "histogram");
  EXPECT_EQ(types["berth_http_request_duration_seconds"], "histogram");
  EXPECT_EQ(types["berth_store_commit_duration_seconds"], "histogram");
  EXPECT_EQ(samples["berth_build_info{version=\"" BERTH_VERSION "\"}"], 1);
  EXPECT_EQ(samples["berth_leader"], 1);
  EXPECT_GE(samples["berth_control_pass_duration_seconds_count"], 1);
  EXPECT_EQ(samples["berth_control_pass_duration_seconds_count"],
            samples["berth_control_pass_duration_seconds_bucket{le=\"+Inf\"}"]);
  const std::string route = "berth_http_request_duration_seconds_count{method=\"GET\",route=\"";
  EXPECT_EQ(samples[route + "/v1/nodes/{id}\",code=\"200\"}"], 1);
  EXPECT_EQ(samples[route + "/v1/nodes/{id}\",code=\"404\"}"], 1);
  EXPECT_GE(samples["berth_store_commit_duration_seconds_count"], 1);
  for (const char* waits :
       {"berth_task_create_to_assigned_seconds", "berth_task_create_to_running_seconds"}) {
    EXPECT_EQ(types[waits], "histogram");
    EXPECT_EQ(samples[std::string(waits) + "_count"], 1) << waits;  // web.1
  }
  EXPECT_EQ(types["berth_engine_group_duration_seconds"], "histogram");
  EXPECT_GE(samples["berth_engine_group_duration_seconds_count"], 1);
}

// The dashboard's files come with a policy that lets the page load only
// its own files and talk only to berthd.
TEST_F(DaemonTest, TheDashboardIsServedWithASecurityPolicy) {
  for (const char* path : {"/ui/", "/ui/app.js", "/ui/style.css"}) {
    httplib::Result r = client_->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_NE(r->get_header_value("Content-Security-Policy").find("script-src 'self'"),
              std::string::npos)
        << path;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff") << path;
  }
  httplib::Result api = client_->Get("/v1/nodes");
  ASSERT_TRUE(api);
  EXPECT_FALSE(api->has_header("Content-Security-Policy"));  // JSON answers need none
}

TEST_F(DaemonTest, NodeLifecycleThroughTheApi) {
  auto [created, node] = Call("POST", "/v1/nodes", R"({"id": "n1", "labels": {"az": "a"}})");
  EXPECT_EQ(created, 201);
  EXPECT_EQ(node["revision"], opened_revision_ + 1);
  EXPECT_EQ(Call("GET", "/v1/nodes/n1").second["labels"]["az"], "a");
  auto [patched, after] = Call("PATCH", "/v1/nodes/n1", R"({"state": "down"})");
  EXPECT_EQ(patched, 200);
  EXPECT_EQ(after["state"], "down");
  EXPECT_EQ(Call("POST", "/v1/nodes/n1/drain").second["availability"], "drain");
  EXPECT_EQ(Call("DELETE", "/v1/nodes/n1").first, 200);
  auto [gone, error] = Call("GET", "/v1/nodes/n1");
  EXPECT_EQ(gone, 404);
  EXPECT_EQ(error["error"]["code"], "not_found");
  EXPECT_EQ(error["error"]["message"], "no node 'n1'");
}

TEST_F(DaemonTest, BadRequestsGet4xxWithAJsonErrorAndChangeNothing) {
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "keep"})").first, 201);
  auto [malformed, m] = Call("POST", "/v1/nodes", R"({"id": "n1",)");
  EXPECT_EQ(malformed, 400);
  EXPECT_EQ(
      m["error"]["message"],
      "invalid JSON: parse error at line 1, column 13: syntax error while parsing object key - "
      "unexpected end of input; expected string literal");
  // Found by the fuzzer: nlohmann reports this as out_of_range, not parse_error.
  auto [overflow, v] = Call("POST", "/v1/nodes", R"({"id": 1E999999})");
  EXPECT_EQ(overflow, 400);
  EXPECT_EQ(v["error"]["message"], "invalid JSON: number overflow parsing '1E999999'");
  auto [unknown, u] = Call("POST", "/v1/nodes", R"({"id": "n1", "colour": "red"})");
  EXPECT_EQ(unknown, 400);
  EXPECT_EQ(u["error"]["message"], "unknown field 'colour'");
  auto [duplicate, d] = Call("POST", "/v1/nodes", R"({"id": "keep"})");
  EXPECT_EQ(duplicate, 409);
  EXPECT_EQ(d["error"]["code"], "conflict");
  auto [oversized, o] =
      Call("POST", "/v1/nodes", R"({"id": "big", "hostname": ")" + std::string(5000, 'x') + "\"}");
  EXPECT_EQ(oversized, 413);
  EXPECT_EQ(o["error"]["code"], "payload_too_large");
  auto [nowhere, n] = Call("GET", "/v1/nothing-here");
  EXPECT_EQ(nowhere, 404);
  EXPECT_EQ(n["error"]["message"], "no such endpoint: GET '/v1/nothing-here'");
  const Json nodes = Call("GET", "/v1/nodes").second["nodes"];
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["id"], "keep");
  EXPECT_EQ(Call("GET", "/v1/health").second["revision"], opened_revision_ + 1);
}

TEST_F(DaemonTest, StateSurvivesARestartWithTheSameToken) {
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "n1"})").first, 201);
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "n2"})").first, 201);
  ASSERT_EQ(Call("POST", "/v1/services", R"({"id": "agent", "mode": "global"})").first, 201);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  const Json before = Call("GET", "/v1/tasks").second["tasks"];
  ASSERT_EQ(before.size(), 2u);
  const std::string token = daemon_->token();
  Reopen();
  EXPECT_EQ(daemon_->token(), token);
  const Json nodes = Call("GET", "/v1/nodes").second["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1]["id"], "n2");
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  EXPECT_EQ(Call("GET", "/v1/tasks").second["tasks"], before);  // no task lost, none doubled
}

TEST_F(DaemonTest, ServicesArePlacedByTheControlLoopAndExplainPendingTasks) {
  ASSERT_EQ(
      Call("POST", "/v1/nodes", R"({"id": "n1", "resources": {"cpu": 2, "memory": "4Gi"}})").first,
      201);
  ASSERT_EQ(Call("POST", "/v1/services",
                 R"({"id": "web", "replicas": 3, "task": {"resources": {"cpu": 0.5}}})")
                .first,
            201);
  ASSERT_EQ(Call("POST", "/v1/services",
                 R"({"id": "big", "replicas": 1, "task": {"resources": {"cpu": 16}}})")
                .first,
            201);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  const Json web = Call("GET", "/v1/tasks?service=web").second["tasks"];
  ASSERT_EQ(web.size(), 3u);
  for (const Json& t : web) {
    EXPECT_EQ(t["state"], "running");
    EXPECT_EQ(t["node"], "n1");
  }
  auto [status, why] = Call("GET", "/v1/tasks/big.1/why");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(why["state"], "pending");
  EXPECT_EQ(why["reason"], "no suitable node (insufficient resources on 1 node)");
  auto [bad, error] =
      Call("POST", "/v1/services", R"({"id": "x", "task": {"constraints": ["node.labels.az=a"]}})");
  EXPECT_EQ(bad, 400);
  EXPECT_NE(error["error"]["message"].get<std::string>().find("task.constraints[0]"),
            std::string::npos)
      << error.dump();
  ASSERT_EQ(Call("PATCH", "/v1/services/web", R"({"replicas": 1})").first, 200);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  int running = 0;
  const Json after = Call("GET", "/v1/tasks?service=web").second["tasks"];
  for (const Json& t : after) running += t["state"] == "running";
  EXPECT_EQ(running, 1);
}

// Issue 18 through berthd: an anti-affinity with itself puts one task per
// node and explains the rest.
TEST_F(DaemonTest, AntiAffinityWithItselfThroughTheControlLoop) {
  for (const char* node : {R"({"id": "n1"})", R"({"id": "n2"})"})
    ASSERT_EQ(Call("POST", "/v1/nodes", node).first, 201);
  ASSERT_EQ(Call("POST", "/v1/services", R"({"id": "web", "replicas": 3,
                 "task": {"affinity": [{"service": "web", "anti": true}]}})")
                .first,
            201);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  std::map<std::string, int> per_node;
  const Json tasks = Call("GET", "/v1/tasks?service=web").second["tasks"];
  for (const Json& t : tasks) {
    if (t["state"] == "pending") {
      EXPECT_EQ(t["message"], "no suitable node (affinity not satisfied on 2 nodes)") << t.dump();
    }
    ++per_node[t.value("node", "")];
  }
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"", 1}, {"n1", 1}, {"n2", 1}}));
}

class BinpackDaemonTest : public DaemonTest {
  void Configure(DaemonOptions& options) override {
    options.reconciler.placement.strategy = placement::PlacementStrategy::kBinpack;
  }
};

// berthd --placement-strategy binpack fills a node before the next.
TEST_F(BinpackDaemonTest, TasksFillOneNodeBeforeTheNext) {
  for (const char* node :
       {R"({"id": "n1", "resources": {"cpu": 2}})", R"({"id": "n2", "resources": {"cpu": 2}})"})
    ASSERT_EQ(Call("POST", "/v1/nodes", node).first, 201);
  ASSERT_EQ(Call("POST", "/v1/services",
                 R"({"id": "web", "replicas": 3, "task": {"resources": {"cpu": 1}}})")
                .first,
            201);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  std::map<std::string, int> per_node;
  const Json tasks = Call("GET", "/v1/tasks?service=web").second["tasks"];
  for (const Json& t : tasks) ++per_node[t.value("node", "")];
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"n1", 2}, {"n2", 1}}));
}

TEST_F(DaemonTest, ASecondDaemonOnTheSameDataDirectoryIsRefused) {
  Result<std::unique_ptr<Daemon>> second = Daemon::Open(Options());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("in use by another process"), std::string::npos);
}

}  // namespace
}  // namespace berth::daemon
