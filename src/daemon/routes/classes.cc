// The fair-share classes: /v1/classes (docs/api.md, "Endpoints").
#include "daemon/daemon.h"
#include "daemon/routes/routes.h"

namespace berth::daemon {

void Daemon::AddClassRoutes() {
  server_->Route("GET", "/v1/classes",
                 [this](const ApiRequest&) { return Answer(classes_.Get()); });
  server_->Route("PATCH", "/v1/classes", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(200, [&] { return classes_.Update(body); }); });
  });
}

}  // namespace berth::daemon
