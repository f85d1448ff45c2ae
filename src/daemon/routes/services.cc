// The service resource: /v1/services and /v1/services/{id}, with rollback
// and rebalance (docs/api.md, "Endpoints").
#include "daemon/daemon.h"
#include "daemon/routes/routes.h"
#include "daemon/views/count_views.h"

namespace berth::daemon {

void Daemon::AddServiceRoutes() {
  constexpr const char* kService = R"(/v1/services/([^/]+))";
  server_->Route("POST", "/v1/services", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(201, [&] { return services_.Create(body); }); });
  });
  // With the loop's counts (this replica runs the loop): each service's
  // "tasks", so `service ls` reads no task.
  server_->Route("GET", "/v1/services", [this](const ApiRequest&) -> Result<ApiResponse> {
    Result<Json> list = services_.List();
    if (!list.ok()) return list.status();
    if (const std::shared_ptr<const CountsSnapshot> counts = Counts())
      AddServiceTasks(*counts, (*list)["services"]);
    return Answer(std::move(list));
  });
  server_->Route("GET", kService,
                 [this](const ApiRequest& r) { return Answer(services_.Get(r.params[0])); });
  server_->Route("PATCH", kService, [this](const ApiRequest& r) {
    return WithBody(r, [&](const Json& body) {
      return Changing(200, [&] { return services_.Update(r.params[0], body); });
    });
  });
  server_->Route("POST", std::string(kService) + "/rollback", [this](const ApiRequest& r) {
    return Changing(200, [&] { return services_.Rollback(r.params[0]); });
  });
  server_->Route("POST", std::string(kService) + "/rebalance", [this](const ApiRequest& r) {
    return Changing(200, [&] { return services_.Rebalance(r.params[0]); });
  });
  server_->Route("DELETE", kService, [this](const ApiRequest& r) {
    return Changing(200, [&] { return Removed(services_.Remove(r.params[0]), r.params[0]); });
  });
}

}  // namespace berth::daemon
