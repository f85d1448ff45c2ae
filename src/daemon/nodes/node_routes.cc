#include "daemon/nodes/node_routes.h"

#include <memory>

#include "api/process_codec.h"
#include "core/task.h"

namespace berth::daemon {
namespace {

using api::Access;
using api::Answer;
using api::ApiRequest;
using api::ApiResponse;
using api::Json;

// The longest an assignments request may wait for a change.
constexpr Duration kMaxAssignmentWait = std::chrono::seconds(60);

// A node's own routes take its credential (the admin may not act as a node).
Result<std::string> CallingNode(const ApiRequest& r) {
  if (r.principal.kind != api::Principal::Kind::kNode)
    return Status::InvalidArgument("only a node calls this, with its own credential");
  return r.principal.node;
}

}  // namespace

Json EncodeAssignments(const AssignmentBatch& batch) {
  Json changes = Json::array();
  for (const Assignment& a : batch.changes) {
    Json item = {{"task", a.task},
                 {"desired_state", a.run ? "running" : "shutdown"},
                 {"revision", a.revision}};
    item["process"] = api::EncodeProcessSpec(*a.process);
    changes.push_back(std::move(item));
  }
  return Json{{"instance", batch.instance},
              {"revision", batch.revision},
              {"full", batch.full},
              {"tasks", std::move(changes)},
              {"poll_after_ms", batch.poll_after.count()}};
}

Status ReadReport(const Json& value, const std::string& path, TaskReport* out) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(value, path, {"task", "state", "message", "ran_ms"}));
  BERTH_RETURN_IF_ERROR(api::RequireField(value, "task", path, api::ReadRunId, &out->task));
  BERTH_RETURN_IF_ERROR(
      api::RequireField(value, "state", path, api::EnumReader(ParseTaskState), &out->state));
  if (out->state != TaskState::kRunning && out->state != TaskState::kComplete &&
      out->state != TaskState::kFailed && out->state != TaskState::kRejected &&
      out->state != TaskState::kShutdown)
    return api::FieldError(api::FieldPath(path, "state"),
                           "expected running, complete, failed, rejected or shutdown");
  BERTH_RETURN_IF_ERROR(api::ReadField(value, "message", path, api::ReadShownText, &out->message));
  int64_t ran_ms = 0;
  BERTH_RETURN_IF_ERROR(api::ReadField(value, "ran_ms", path, api::ReadInteger, &ran_ms));
  out->ran_ms = std::max<int64_t>(0, ran_ms);
  return Status::Ok();
}

namespace {

Result<std::vector<TaskReport>> ReadReports(const Json& body) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(body, "", {"tasks"}));
  std::vector<TaskReport> reports;
  BERTH_RETURN_IF_ERROR(api::RequireField(
      body, "tasks", "",
      [](const Json& v, const std::string& path, std::vector<TaskReport>* out) {
        return api::ReadList(v, path, ReadReport, out);
      },
      &reports));
  return reports;
}

}  // namespace

Result<Json> TakeReports(NodeExecutor& executor, const std::string& node, const Json& body) {
  Result<std::vector<TaskReport>> reports = ReadReports(body);
  if (!reports.ok()) return reports.status();
  const size_t count = reports->size();
  const std::vector<std::string> refused = executor.Report(node, std::move(*reports));
  if (count > 0 && refused.size() == count)
    return Status::PermissionDenied("task '" + refused[0] + "' is not assigned to node '" + node +
                                    "'");
  return Json{{"accepted", count - refused.size()}, {"refused", refused}};
}

namespace {

// The routes' shared state: what they were given, kept alive by each route.
struct Routes {
  NodeDispatcher& dispatcher;
  NodeExecutor& executor;
  NodeRouteHooks hooks;

  Result<ApiResponse> Stamped(Result<Json> answer) const {
    if (answer.ok()) hooks.stamp(*answer);
    return Answer(std::move(answer));
  }

  Result<ApiResponse> Register(const ApiRequest& r) const {
    BERTH_RETURN_IF_ERROR(hooks.admit(r));
    return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
      bool removed = false;
      Result<Json> joined = dispatcher.Register(body, r.principal, &removed);
      // The code berth-node stops on (docs/agent.md, "Removing a node").
      if (removed) return api::ErrorAnswer(403, api::kNodeRemovedCode, joined.status().message());
      return Stamped(std::move(joined));
    });
  }

  Result<ApiResponse> Assignments(const ApiRequest& r) const {
    Result<std::string> node = CallingNode(r);
    if (!node.ok()) return node.status();
    Result<int64_t> since = api::QueryCount(r, "since", 0);
    if (!since.ok()) return since.status();
    Result<int64_t> wait_ms = api::QueryCount(r, "wait_ms", 0);
    if (!wait_ms.ok()) return wait_ms.status();
    const Duration wait = std::min(Duration{*wait_ms}, kMaxAssignmentWait);
    return Stamped(
        EncodeAssignments(executor.Assignments(*node, r.Query("instance"), *since, wait)));
  }

  Result<ApiResponse> TaskStatus(const ApiRequest& r) const {
    Result<std::string> node = CallingNode(r);
    if (!node.ok()) return node.status();
    return api::WithBody(
        r, [&](const Json& body) { return Answer(TakeReports(executor, *node, body)); });
  }

  static Result<ApiResponse> Token(Result<std::string> token) {
    if (!token.ok()) return token.status();
    return Answer(Json{{"token", *token}});
  }
};

}  // namespace

void AddDispatcherRoutes(api::ApiServer& server, NodeDispatcher& dispatcher, NodeExecutor& executor,
                         NodeRouteHooks hooks) {
  auto routes = std::make_shared<const Routes>(Routes{dispatcher, executor, std::move(hooks)});
  // Every route first asks whether the host serves nodes now.
  auto route = [&server, routes](const char* method, const char* path, auto handler,
                                 Access access) {
    server.Route(
        method, path,
        [routes, handler](const ApiRequest& r) -> Result<ApiResponse> {
          BERTH_RETURN_IF_ERROR(routes->hooks.serving());
          return handler(*routes, r);
        },
        access);
  };
  route(
      "POST", "/v1/node/register",
      [](const Routes& s, const ApiRequest& r) { return s.Register(r); }, Access::kNodeJoin);
  route(
      "POST", "/v1/node/heartbeat",
      [](const Routes& s, const ApiRequest& r) -> Result<ApiResponse> {
        Result<std::string> node = CallingNode(r);
        if (!node.ok()) return node.status();
        return s.Stamped(s.dispatcher.Heartbeat(*node));
      },
      Access::kNode);
  route(
      "POST", "/v1/node/certificate",
      [](const Routes& s, const ApiRequest& r) -> Result<ApiResponse> {
        Result<std::string> node = CallingNode(r);
        if (!node.ok()) return node.status();
        return api::WithBody(
            r, [&](const Json& body) { return Answer(s.dispatcher.Renew(*node, body)); });
      },
      Access::kNode);
  // The CA's public certificate, for a machine about to join: it checks the
  // digest its join token carries before it sends the token.
  if (const ClusterCa* ca = dispatcher.ca(); ca != nullptr)
    server.Route(
        "GET", "/v1/ca",
        [ca](const ApiRequest&) -> Result<ApiResponse> {
          return ApiResponse{200, Json::parse(ca->Describe()), "", ""};
        },
        Access::kPublic);
  route(
      "GET", "/v1/node/assignments",
      [](const Routes& s, const ApiRequest& r) { return s.Assignments(r); }, Access::kNode);
  route(
      "POST", "/v1/node/status",
      [](const Routes& s, const ApiRequest& r) { return s.TaskStatus(r); }, Access::kNode);
  // The join token is the host's (a berthd leader's: only it has read it).
  route(
      "GET", "/v1/tokens/node",
      [](const Routes& s, const ApiRequest&) { return Routes::Token(s.dispatcher.JoinToken()); },
      Access::kAdmin);
  route(
      "POST", "/v1/tokens/node/rotate",
      [](const Routes& s, const ApiRequest&) {
        return Routes::Token(s.dispatcher.RotateJoinToken());
      },
      Access::kAdmin);
}

}  // namespace berth::daemon
