#include "agent_server/agent_service.h"

#include <atomic>
#include <cstdlib>
#include <memory>

#include "api/agent_codec.h"

namespace berth::agent_server {

using api::ApiRequest;
using api::ApiResponse;
using api::Json;

namespace {

// The newest berthd leader epoch seen (api::kEpochHeader). A call of an
// older one comes from a deposed leader, and is refused with 409 before it
// changes anything (docs/ha.md). A call without the header (a single
// berthd, or a scheduler instance) is let through.
class EpochFence {
 public:
  Status Admit(const std::string& header) {
    if (header.empty()) return Status::Ok();
    char* end = nullptr;
    const long long epoch = std::strtoll(header.c_str(), &end, 10);
    if (*end != '\0' || epoch <= 0)
      return Status::InvalidArgument(std::string(api::kEpochHeader) +
                                     ": expected a positive integer, got '" + header + "'");
    int64_t newest = newest_.load();
    while (epoch > newest && !newest_.compare_exchange_weak(newest, epoch)) {
    }
    if (epoch < newest)
      return Status::Conflict("a berthd leader of epoch " + std::to_string(newest) +
                              " has taken over; epoch " + header + " is stale");
    return Status::Ok();
  }

 private:
  std::atomic<int64_t> newest_{0};
};

}  // namespace

void AddAgentRoutes(api::ApiServer& server, agent::Agent& agent, NodeFleet* fleet) {
  auto fence = std::make_shared<EpochFence>();
  if (fleet != nullptr) fleet->AddRoutes(server);
  server.Route("GET", "/v1/agent", [&agent, fleet](const ApiRequest&) -> Result<ApiResponse> {
    const agent::AgentCounters& c = agent.counters();
    return ApiResponse{200,
                       Json{{"id", agent.id()},
                            {"nodes", agent.nodes().size()},
                            {"bound", c.bound.load()},
                            {"conflicts", c.conflicts.load()},
                            {"samples", c.samples.load()},
                            {"released", c.released.load()},
                            {"bindings", agent.bindings()},
                            {"fleet", fleet != nullptr}},
                       "", ""};
  });
  server.Route("POST", "/v1/sample", [&agent, fence](const ApiRequest& r) {
    return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
      BERTH_RETURN_IF_ERROR(fence->Admit(r.epoch));
      Result<agent::SampleRequest> request = api::DecodeSampleRequest(body);
      if (!request.ok()) return request.status();
      return ApiResponse{200, api::EncodeSampleResponse(agent.Sample(*request)), "", ""};
    });
  });
  server.Route("POST", "/v1/commit", [&agent, fleet, fence](const ApiRequest& r) {
    return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
      BERTH_RETURN_IF_ERROR(fence->Admit(r.epoch));
      Result<agent::CommitRequest> request = api::DecodeCommitRequest(body);
      if (!request.ok()) return request.status();
      return ApiResponse{
          200,
          api::EncodeCommitResponse(fleet != nullptr ? fleet->Commit(*request)
                                                     : agent.Commit(*request)),
          "", ""};
    });
  });
  server.Route("POST", "/v1/release", [&agent, fleet, fence](const ApiRequest& r) {
    return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
      BERTH_RETURN_IF_ERROR(fence->Admit(r.epoch));
      Result<std::vector<std::string>> ids = api::DecodeIdList(body, "tasks");
      if (!ids.ok()) return ids.status();
      const size_t released = fleet != nullptr ? fleet->Release(*ids) : agent.Release(*ids);
      return ApiResponse{200, Json{{"released", released}}, "", ""};
    });
  });
  server.Route("GET", "/v1/bindings", [&agent](const ApiRequest&) -> Result<ApiResponse> {
    return ApiResponse{200, api::EncodeIdList("tasks", agent.BoundTasks()), "", ""};
  });
  server.Route("POST", "/v1/eligible", [&agent](const ApiRequest& r) {
    return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
      Result<TaskSpec> spec = api::DecodeEligibleRequest(body);
      if (!spec.ok()) return spec.status();
      return ApiResponse{200, api::EncodeIdList("nodes", agent.Eligible(*spec)), "", ""};
    });
  });
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
