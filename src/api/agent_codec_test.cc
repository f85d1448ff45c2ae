// The berth-agent wire format: every message survives a round trip, and a
// malformed one is refused naming its field.
#include "api/agent_codec.h"

#include <gtest/gtest.h>

namespace berth::api {
namespace {

agent::PlacementTask Task() {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = 500;
  spec->constraints = {"node.labels.az==a"};
  return {"web.1", 3, spec, {}, {}, {}};
}

TEST(AgentCodec, SampleRequestRoundTripsWithItsNode) {
  agent::SampleRequest request{Task(), 250, Duration{20}, "a-n7"};
  Result<agent::SampleRequest> decoded = DecodeSampleRequest(EncodeSampleRequest(request));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->task.id, "web.1");
  EXPECT_EQ(decoded->task.priority, 3);
  EXPECT_EQ(decoded->task.spec->reservations.milli_cpu, 500);
  EXPECT_EQ(decoded->task.spec->constraints, request.task.spec->constraints);
  EXPECT_EQ(decoded->basis_points, 250);
  EXPECT_EQ(decoded->budget, Duration{20});
  EXPECT_EQ(decoded->node_id, "a-n7");
  request.node_id.clear();
  EXPECT_FALSE(EncodeSampleRequest(request).contains("node"));  // any node
}

TEST(AgentCodec, EveryKindOfPreferenceRoundTrips) {
  agent::PlacementTask task = Task();
  auto spec = std::make_shared<TaskSpec>(*task.spec);
  PlacementPreference weighted = PlacementPreference::Spread("node.labels.az");
  weighted.weights = {{"a", 3}, {"b", 1}};
  weighted.other_weight = 2;
  spec->preferences = {weighted, PlacementPreference::Pack("node.labels.rack"),
                       PlacementPreference::Pack("node.id")};
  spec->preferred_constraints = {"node.labels.disk==ssd"};
  spec->affinities = {{"db", false, false}, {"web", true, true}};
  task.spec = spec;
  Result<agent::SampleRequest> decoded =
      DecodeSampleRequest(EncodeSampleRequest({task, 250, Duration{20}, ""}));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->task.spec->preferences, spec->preferences);
  EXPECT_EQ(decoded->task.spec->preferred_constraints, spec->preferred_constraints);
  EXPECT_EQ(decoded->task.spec->affinities, spec->affinities);
}

TEST(AgentCodec, SampleResponseRoundTripsWithItsReason) {
  agent::SampleResponse response;
  response.nodes.push_back({"a", "a-n1", 0, 4, 150, 2, 900, 1 << 20, 1000, 2 << 20, ""});
  response.nodes.push_back({"a", "a-n2", 0, 5, 150, 2, 900, 1 << 20, 1000, 2 << 20, "zone-b"});
  response.looked_at = 9;
  Result<agent::SampleResponse> decoded = DecodeSampleResponse(EncodeSampleResponse(response), "a");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  ASSERT_EQ(decoded->nodes.size(), 2u);
  EXPECT_EQ(decoded->nodes[0].node_id, "a-n1");
  EXPECT_EQ(decoded->nodes[0].spread_value, "");
  EXPECT_EQ(decoded->nodes[1].spread_value, "zone-b");  // a ninth element, only when set
  EXPECT_EQ(decoded->nodes[0].node_index, 4u);
  EXPECT_EQ(decoded->nodes[0].free_memory_bytes, 1 << 20);
  EXPECT_EQ(decoded->looked_at, 9u);
  agent::SampleResponse none;
  none.reason = "node 'a-n1': insufficient resources on 1 node";
  EXPECT_EQ(DecodeSampleResponse(EncodeSampleResponse(none), "a")->reason, none.reason);
}

TEST(AgentCodec, IdListsAndEligibleRequestsRoundTrip) {
  const std::vector<std::string> ids = {"web.1", "web.2"};
  EXPECT_EQ(*DecodeIdList(EncodeIdList("tasks", ids), "tasks"), ids);
  EXPECT_EQ(*DecodeIdList(EncodeIdList("nodes", {}), "nodes"), std::vector<std::string>{});
  Result<TaskSpec> spec = DecodeEligibleRequest(EncodeEligibleRequest(*Task().spec));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->constraints, Task().spec->constraints);
}

TEST(AgentCodec, ACommitMayNameItsNodeByIdAlone) {
  Result<agent::CommitRequest> r =
      DecodeCommitRequest({{"task", {{"id", "web.1"}}}, {"node_id", "a-n3"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->node_id, "a-n3");
  EXPECT_EQ(r->node_index, 0u);
  EXPECT_FALSE(DecodeCommitRequest({{"task", {{"id", "web.1"}}}, {"node_index", 3}}).ok());
}

TEST(AgentCodec, ACommitCarriesTheProcessAndTheRunOfATaskThatRunsOnABerthNode) {
  agent::CommitRequest request;
  request.node_id = "n11";
  request.task.id = "build.3";
  request.task.spec = std::make_shared<TaskSpec>();
  auto process = std::make_shared<executor::ProcessSpec>();
  process->command = "make";
  process->args = {"shard-3"};
  process->limit_memory = 64 << 20;
  request.task.process = process;
  request.task.run_id = "build.3~2";
  Result<agent::CommitRequest> back = DecodeCommitRequest(EncodeCommitRequest(request));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_NE(back->task.process, nullptr);
  EXPECT_EQ(*back->task.process, *process);
  EXPECT_EQ(back->task.run(), "build.3~2");
  // A run of another task, a process without a command: refused, named.
  Json other = EncodeCommitRequest(request);
  other["task"]["run"] = "test.1~2";
  EXPECT_NE(DecodeCommitRequest(other).status().message().find("task.run"), std::string::npos);
  Json commandless = EncodeCommitRequest(request);
  commandless["task"]["process"].erase("command");
  EXPECT_NE(DecodeCommitRequest(commandless).status().message().find("needs \"command\""),
            std::string::npos);
}

TEST(AgentCodec, RunsBatchesRoundTripAndRefuseStatesARunCannotReport) {
  const agent::RunsBatch batch{"c0ffee", 7, true, 2,
                               {{"web.1", "n11", TaskState::kRunning, "started", 0},
                                {"build.3~2", "n12", TaskState::kFailed, "exit status 3", 1200}}};
  Result<agent::RunsBatch> back = DecodeRunsBatch(EncodeRunsBatch(batch));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->instance, "c0ffee");
  EXPECT_EQ(back->sequence, 7);
  EXPECT_TRUE(back->full);
  EXPECT_EQ(back->nodes, 2u);
  ASSERT_EQ(back->runs.size(), 2u);
  EXPECT_EQ(back->runs[1].run, "build.3~2");
  EXPECT_EQ(back->runs[1].state, TaskState::kFailed);
  EXPECT_EQ(back->runs[1].ran_ms, 1200);
  Json pending = EncodeRunsBatch(batch);
  pending["runs"][0]["state"] = "pending";
  EXPECT_NE(DecodeRunsBatch(pending).status().message().find("runs[0].state"), std::string::npos);
  EXPECT_FALSE(DecodeRunsBatch(Json{{"sequence", 1}}).ok());  // no instance
}

TEST(AgentCodec, MalformedMessagesNameTheirField) {
  auto error = [](const Result<agent::SampleRequest>& r) { return r.status().message(); };
  EXPECT_NE(error(DecodeSampleRequest({{"task", {{"id", "t"}}}, {"node", 7}})).find("node"),
            std::string::npos);
  EXPECT_NE(error(DecodeSampleRequest({{"task", {{"id", "t"}}}, {"extra", 1}})).find("extra"),
            std::string::npos);
  EXPECT_FALSE(DecodeSampleResponse({{"nodes", Json::array()}, {"reason", 1}}, "a").ok());
  EXPECT_FALSE(DecodeIdList({{"tasks", {1, 2}}}, "tasks").ok());
  EXPECT_FALSE(DecodeIdList({{"nodes", Json::array()}}, "tasks").ok());
  EXPECT_FALSE(DecodeEligibleRequest({{"task", {{"constraints", {"node.labels.az=a"}}}}}).ok());
  EXPECT_FALSE(DecodeEligibleRequest(Json::object()).ok());
}

}  // namespace
}  // namespace berth::api
