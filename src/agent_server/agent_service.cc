#include "agent_server/agent_service.h"

#include <cstdlib>

#include "api/agent_codec.h"
#include "api/cluster_codec.h"

namespace berth::agent_server {

using api::ApiRequest;
using api::ApiResponse;
using api::Json;

Status AgentCalls::AdmitEpoch(const std::string& header) {
  if (header.empty()) return Status::Ok();
  char* end = nullptr;
  const long long epoch = std::strtoll(header.c_str(), &end, 10);
  if (*end != '\0' || epoch <= 0)
    return Status::InvalidArgument(std::string(api::kEpochHeader) +
                                   ": expected a positive integer, got '" + header + "'");
  int64_t newest = newest_epoch_.load();
  while (epoch > newest && !newest_epoch_.compare_exchange_weak(newest, epoch)) {
  }
  if (epoch < newest)
    return Status::Conflict("a berthd leader of epoch " + std::to_string(newest) +
                            " has taken over; epoch " + header + " is stale");
  return Status::Ok();
}

Result<Json> AgentCalls::Sample(const Json& body, Duration budget_cap) {
  Result<agent::SampleRequest> request = api::DecodeSampleRequest(body);
  if (!request.ok()) return request.status();
  request->budget = std::min(request->budget, budget_cap);
  return api::EncodeSampleResponse(agent_.Sample(*request));
}

Result<Json> AgentCalls::Commit(const Json& body) {
  Result<agent::CommitRequest> request = api::DecodeCommitRequest(body);
  if (!request.ok()) return request.status();
  return api::EncodeCommitResponse(fleet_ != nullptr ? fleet_->Commit(*request)
                                                     : agent_.Commit(*request));
}

Result<Json> AgentCalls::Release(const Json& body) {
  Result<std::vector<std::string>> ids = api::DecodeIdList(body, "tasks");
  if (!ids.ok()) return ids.status();
  const size_t released = fleet_ != nullptr ? fleet_->Release(*ids) : agent_.Release(*ids);
  return Json{{"released", released}};
}

Result<Json> AgentCalls::Eligible(const Json& body) {
  Result<TaskSpec> spec = api::DecodeEligibleRequest(body);
  if (!spec.ok()) return spec.status();
  return api::EncodeIdList("nodes", agent_.Eligible(*spec));
}

Json AgentCalls::Bindings() const { return api::EncodeIdList("tasks", agent_.BoundTasks()); }

namespace {

// One node as berthd's GET /v1/nodes shows one (api.md's node object with
// its use), read under the node's lock.
Json NodeJson(const agent::AgentNode& n, const std::string& agent_id) {
  const Node& node = n.info.node();
  const NodeResources& r = node.resources;
  Json labels = Json::object();
  for (const auto& [key, value] : node.labels) labels[key] = value;
  Json json = {{"id", node.id},
               {"hostname", node.hostname},
               {"state", ToString(node.state)},
               {"availability", ToString(node.availability)},
               {"resources", api::ResourcesJson(r.milli_cpu, r.memory_bytes)},
               {"labels", std::move(labels)},
               {"agent", agent_id}};
  json.update(api::NodeUseOf(n.bound_tasks, n.bound_milli_cpu, n.bound_memory_bytes, r));
  return json;
}

}  // namespace

Json AgentCalls::Nodes() const {
  const agent::NodesCache& cache = agent_.nodes();
  Json nodes = Json::array();
  for (uint32_t i = 0; i < cache.size(); ++i)
    nodes.push_back(
        cache.Read(i, [&](const agent::AgentNode& n) { return NodeJson(n, agent_.id()); }));
  return Json{{"nodes", std::move(nodes)}};
}

namespace {

// A POST route of `calls`: fenced by the caller's epoch when `fenced`.
template <typename Call>
api::ApiHandler Post(AgentCalls& calls, bool fenced, Call call) {
  return [&calls, fenced, call](const ApiRequest& r) {
    return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
      if (fenced) BERTH_RETURN_IF_ERROR(calls.AdmitEpoch(r.epoch));
      Result<Json> answer = call(body);
      if (!answer.ok()) return answer.status();
      return ApiResponse{200, std::move(*answer), "", ""};
    });
  };
}

}  // namespace

void AddAgentRoutes(api::ApiServer& server, AgentCalls& calls, int rpc_port) {
  agent::Agent& agent = calls.agent();
  NodeFleet* fleet = calls.fleet();
  if (fleet != nullptr) fleet->AddRoutes(server);
  server.Route("GET", "/v1/agent",
               [&agent, fleet, rpc_port](const ApiRequest&) -> Result<ApiResponse> {
                 const agent::AgentCounters& c = agent.counters();
                 return ApiResponse{200,
                                    Json{{"id", agent.id()},
                                         {"nodes", agent.nodes().size()},
                                         {"bound", c.bound.load()},
                                         {"conflicts", c.conflicts.load()},
                                         {"samples", c.samples.load()},
                                         {"released", c.released.load()},
                                         {"bindings", agent.bindings()},
                                         {"fleet", fleet != nullptr},
                                         {"rpc_port", rpc_port}},
                                    "", ""};
               });
  server.Route("POST", "/v1/sample",
               Post(calls, true, [&calls](const Json& b) { return calls.Sample(b); }));
  server.Route("POST", "/v1/commit",
               Post(calls, true, [&calls](const Json& b) { return calls.Commit(b); }));
  server.Route("POST", "/v1/release",
               Post(calls, true, [&calls](const Json& b) { return calls.Release(b); }));
  server.Route("GET", "/v1/bindings", [&calls](const ApiRequest&) -> Result<ApiResponse> {
    return ApiResponse{200, calls.Bindings(), "", ""};
  });
  server.Route("GET", "/v1/nodes", [&calls](const ApiRequest&) -> Result<ApiResponse> {
    return ApiResponse{200, calls.Nodes(), "", ""};
  });
  server.Route("POST", "/v1/eligible",
               Post(calls, false, [&calls](const Json& b) { return calls.Eligible(b); }));
  server.Route("GET", "/metrics", [&agent, &server](const ApiRequest&) -> Result<ApiResponse> {
    const agent::AgentCounters& c = agent.counters();
    api::MetricsText metrics;
    metrics.Add("berth_agent_samples_total", "Sampling requests served.", c.samples.load());
    metrics.Add("berth_agent_bound_total", "Commits that bound a task.", c.bound.load());
    metrics.Add("berth_agent_conflicts_total", "Commits answered with a conflict.",
                c.conflicts.load());
    metrics.Add("berth_agent_released_total", "Bindings released because their task stopped.",
                c.released.load());
    metrics.Add("berth_agent_errors_total", "Commits answered with an error.", c.errors.load());
    metrics.Add("berth_http_unauthorized_total", "Requests refused for a missing or wrong token.",
                server.counters().unauthorized.load());
    return metrics.Response();
  });
}

}  // namespace berth::agent_server
