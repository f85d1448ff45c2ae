// The job resource: /v1/jobs and /v1/jobs/{id} (docs/api.md, "Endpoints").
#include "daemon/daemon.h"
#include "daemon/routes/routes.h"

namespace berth::daemon {

void Daemon::AddJobRoutes() {
  constexpr const char* kJob = R"(/v1/jobs/([^/]+))";
  server_->Route("POST", "/v1/jobs", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(201, [&] { return jobs_.Submit(body); }); });
  });
  server_->Route("GET", "/v1/jobs", [this](const ApiRequest&) { return Answer(jobs_.List()); });
  server_->Route("GET", kJob,
                 [this](const ApiRequest& r) { return Answer(jobs_.Get(r.params[0])); });
  server_->Route("DELETE", kJob, [this](const ApiRequest& r) {
    return Changing(200, [&] { return jobs_.Kill(r.params[0]); });
  });
}

}  // namespace berth::daemon
