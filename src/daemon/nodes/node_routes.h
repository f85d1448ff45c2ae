// The routes berth-node machines call (docs/api.md, "Nodes that run
// tasks"): registration, heartbeats, assignments and task status, and the
// admin's node join token. One set of routes for both of the dispatcher's
// hosts: berthd, and a berth-agent that fronts berth-node machines
// (docs/agent.md).
#pragma once

#include <functional>

#include "api/http_server.h"
#include "daemon/nodes/node_dispatcher.h"
#include "daemon/nodes/node_executor.h"

namespace berth::daemon {

// What the host adds to its node routes.
struct NodeRouteHooks {
  // Ok: this host answers nodes now. Else the refusal (berthd: not the
  // leader). Default: always answers.
  std::function<Status()> serving = [] { return Status::Ok(); };
  // Adds the host's fields to an answer to a node (berthd: the leader's
  // epoch). Default: none.
  std::function<void(api::Json&)> stamp = [](api::Json&) {};
  // Checked before a registration (a berth-agent: room for one more
  // node). Default: every registration goes on to the dispatcher.
  std::function<Status(const api::ApiRequest&)> admit = [](const api::ApiRequest&) {
    return Status::Ok();
  };
};

// The answer of GET /v1/node/assignments (and of a session's push).
api::Json EncodeAssignments(const AssignmentBatch& batch);
// POST /v1/node/status's work for `node`: {"accepted", "refused"};
// InvalidArgument for a body that is not a batch of reports,
// PermissionDenied when every report names another node's task.
Result<api::Json> TakeReports(NodeExecutor& executor, const std::string& node,
                              const api::Json& body);

void AddDispatcherRoutes(api::ApiServer& server, NodeDispatcher& dispatcher, NodeExecutor& executor,
                         NodeRouteHooks hooks = {});

}  // namespace berth::daemon
