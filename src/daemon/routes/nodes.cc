// The node resource: /v1/nodes and /v1/nodes/{id} (docs/api.md, "Endpoints").
#include "core/names.h"
#include "daemon/daemon.h"
#include "daemon/registry/task_views.h"
#include "daemon/routes/routes.h"
#include "daemon/views/count_views.h"

namespace berth::daemon {

void Daemon::AddNodeRoutes() {
  constexpr const char* kNode = R"(/v1/nodes/([^/]+))";
  server_->Route("POST", "/v1/nodes", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(201, [&] { return nodes_.Register(body); }); });
  });
  // A node's use comes from the loop's counts where this replica runs the
  // loop; a follower reads the tasks for one node, and lists without it.
  // With agents, their nodes follow berthd's own (each with "agent").
  server_->Route("GET", "/v1/nodes", [this](const ApiRequest&) -> Result<ApiResponse> {
    Result<Json> list = nodes_.List();
    if (!list.ok()) return list.status();
    if (const std::shared_ptr<const CountsSnapshot> counts = Counts())
      AddNodeUse(*counts, (*list)["nodes"]);
    if (!connected_agents_.empty()) {
      Json agents = AgentNodes();
      for (Json& node : agents["nodes"]) (*list)["nodes"].push_back(std::move(node));
      if (!agents["unreachable"].empty()) (*list)["unreachable"] = std::move(agents["unreachable"]);
    }
    return Answer(std::move(list));
  });
  server_->Route("GET", kNode, [this](const ApiRequest& r) -> Result<ApiResponse> {
    Result<Json> node = nodes_.Get(r.params[0]);
    if (!node.ok() && node.status().code() == StatusCode::kNotFound && !connected_agents_.empty()) {
      Json agents = AgentNodes();
      for (Json& n : agents["nodes"])
        if (n.value("id", "") == r.params[0]) return Answer(std::move(n));
    }
    if (!node.ok()) return node.status();
    const std::shared_ptr<const CountsSnapshot> counts = Counts();
    const NodeRow* row = counts ? counts->FindNode(r.params[0]) : nullptr;
    Result<Json> usage = row != nullptr ? NodeUseJson(*row) : NodeUsage(*store_, *node);
    if (usage.ok()) node->update(*usage);
    return Answer(std::move(node));
  });
  server_->Route("PATCH", kNode, [this](const ApiRequest& r) {
    return WithBody(r, [&](const Json& body) {
      return Changing(200, [&] { return nodes_.Update(r.params[0], body); });
    });
  });
  server_->Route("POST", std::string(kNode) + "/drain", [this](const ApiRequest& r) {
    return Changing(200, [&] { return nodes_.Drain(r.params[0]); });
  });
  // The leader's: it revokes the credential it holds. A ready node only
  // with ?force=true, as `docker node rm --force`.
  server_->Route("DELETE", kNode, [this](const ApiRequest& r) -> Result<ApiResponse> {
    if (!leading()) return NotLeading();
    const std::string force = r.Query("force");
    if (force != "" && force != "true" && force != "false")
      return api::FieldError("force", "expected true or false, got " + Quoted(force));
    return Changing(200, [&] {
      return Removed(dispatcher_->Remove(r.params[0], force == "true"), r.params[0]);
    });
  });
}

}  // namespace berth::daemon
