// The task resource: /v1/tasks, /v1/tasks/{id} and /why (docs/api.md, "Endpoints").
#include "daemon/daemon.h"
#include "daemon/registry/task_views.h"
#include "daemon/routes/routes.h"

namespace berth::daemon {

void Daemon::AddTaskRoutes() {
  constexpr const char* kTask = R"(/v1/tasks/([^/]+))";
  server_->Route("GET", "/v1/tasks", [this](const ApiRequest& r) {
    return Answer(ListTasks(*store_, {r.Query("service"), r.Query("node"), r.Query("state"),
                                      r.Query("desired_state"), r.Query("job")}));
  });
  server_->Route("GET", kTask,
                 [this](const ApiRequest& r) { return Answer(GetTask(*store_, r.params[0])); });
  server_->Route("GET", std::string(kTask) + "/why",
                 [this](const ApiRequest& r) { return Answer(WhyTask(*store_, r.params[0])); });
}

}  // namespace berth::daemon
