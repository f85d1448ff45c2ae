// The routes of berth-node machines and of what berthd serves from them
// (docs/api.md, "Nodes that run tasks"): registration, heartbeats,
// assignments, task status, the node join token, and task logs.
#include <charconv>

#include "api/api_client.h"
#include "api/process_codec.h"
#include "core/names.h"
#include "core/task.h"
#include "daemon/daemon.h"
#include "daemon/registry/task_views.h"

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

// A query parameter that is a non-negative integer, or `fallback` when absent.
Result<int64_t> QueryCount(const ApiRequest& r, const std::string& name, int64_t fallback) {
  const std::string text = r.Query(name);
  if (text.empty()) return fallback;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return Status::InvalidArgument(name + ": expected a non-negative integer, got '" +
                                   text.substr(0, 64) + "'");
  return value;
}

Json EncodeBatch(const AssignmentBatch& batch) {
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

// A report names a run (RunIdOf): a task id, with "~<attempt>" from a job
// task's second run on.
Status ReadRunId(const Json& value, const std::string& path, std::string* out) {
  BERTH_RETURN_IF_ERROR(api::ReadText(value, path, out));
  const std::string_view task = TaskIdOfRun(*out);
  const std::string_view attempt = std::string_view(*out).substr(task.size());
  if (Status id = CheckTaskId(task); !id.ok()) return api::FieldError(path, id.message());
  if (!attempt.empty() &&
      (attempt.size() < 2 || attempt.find_first_not_of("0123456789", 1) != std::string_view::npos))
    return api::FieldError(path, "expected a task id, with '~' and an attempt number after it");
  return Status::Ok();
}

Status ReadReport(const Json& value, const std::string& path, TaskReport* out) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(value, path, {"task", "state", "message", "ran_ms"}));
  BERTH_RETURN_IF_ERROR(api::RequireField(value, "task", path, ReadRunId, &out->task));
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

}  // namespace

// A leader's answers to nodes carry its epoch (0 without etcd): berth-node
// refuses answers of an epoch older than one it has seen (docs/ha.md).
Result<Json> Daemon::WithEpoch(Result<Json> answer) const {
  if (answer.ok() && leadership_ != nullptr) (*answer)["epoch"] = leadership_->view().epoch;
  return answer;
}

void Daemon::AddBerthNodeRoutes() {
  server_->Route(
      "POST", "/v1/node/register",
      [this](const ApiRequest& r) -> Result<ApiResponse> {
        if (!leading()) return NotLeading();
        return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
          bool removed = false;
          Result<Json> joined = dispatcher_->Register(body, r.principal, &removed);
          // The code berth-node stops on (docs/agent.md, "Removing a node").
          if (removed)
            return api::ErrorAnswer(403, api::kNodeRemovedCode, joined.status().message());
          return Answer(std::move(joined));
        });
      },
      Access::kNodeJoin);
  server_->Route(
      "POST", "/v1/node/heartbeat",
      [this](const ApiRequest& r) -> Result<ApiResponse> {
        if (!leading()) return NotLeading();
        Result<std::string> node = CallingNode(r);
        if (!node.ok()) return node.status();
        return Answer(WithEpoch(dispatcher_->Heartbeat(*node)));
      },
      Access::kNode);
  server_->Route(
      "GET", "/v1/node/assignments",
      [this](const ApiRequest& r) -> Result<ApiResponse> {
        if (!leading()) return NotLeading();
        Result<std::string> node = CallingNode(r);
        if (!node.ok()) return node.status();
        Result<int64_t> since = QueryCount(r, "since", 0);
        if (!since.ok()) return since.status();
        Result<int64_t> wait_ms = QueryCount(r, "wait_ms", 0);
        if (!wait_ms.ok()) return wait_ms.status();
        const Duration wait = std::min(Duration{*wait_ms}, kMaxAssignmentWait);
        return Answer(WithEpoch(
            EncodeBatch(node_executor_->Assignments(*node, r.Query("instance"), *since, wait))));
      },
      Access::kNode);
  server_->Route(
      "POST", "/v1/node/status",
      [this](const ApiRequest& r) -> Result<ApiResponse> {
        if (!leading()) return NotLeading();
        Result<std::string> node = CallingNode(r);
        if (!node.ok()) return node.status();
        return api::WithBody(r, [&](const Json& body) -> Result<ApiResponse> {
          BERTH_RETURN_IF_ERROR(api::CheckObject(body, "", {"tasks"}));
          std::vector<TaskReport> reports;
          BERTH_RETURN_IF_ERROR(api::RequireField(
              body, "tasks", "",
              [](const Json& v, const std::string& path, std::vector<TaskReport>* out) {
                return api::ReadList(v, path, ReadReport, out);
              },
              &reports));
          const size_t count = reports.size();
          const std::vector<std::string> refused =
              node_executor_->Report(*node, std::move(reports));
          if (count > 0 && refused.size() == count)
            return Status::PermissionDenied("task '" + refused[0] + "' is not assigned to node '" +
                                            *node + "'");
          return Answer(Json{{"accepted", count - refused.size()}, {"refused", refused}});
        });
      },
      Access::kNode);
  // The join token and nodes' credentials are the leader's (only it has
  // read them), and so are the node logs it fetches with them.
  server_->Route("GET", "/v1/tokens/node", [this](const ApiRequest&) -> Result<ApiResponse> {
    if (!leading()) return NotLeading();
    Result<std::string> token = dispatcher_->JoinToken();
    if (!token.ok()) return token.status();
    return Answer(Json{{"token", *token}});
  });
  server_->Route("POST", "/v1/tokens/node/rotate",
                 [this](const ApiRequest&) -> Result<ApiResponse> {
                   if (!leading()) return NotLeading();
                   Result<std::string> token = dispatcher_->RotateJoinToken();
                   if (!token.ok()) return token.status();
                   return Answer(Json{{"token", *token}});
                 });
  server_->Route("GET", R"(/v1/tasks/([^/]+)/logs)",
                 [this](const ApiRequest& r) { return Answer(TaskLogs(r)); });
}

// Asks the task's node for its log lines (the node's GET
// /v1/tasks/{id}/logs, with the node's credential).
Result<Json> Daemon::TaskLogs(const ApiRequest& r) {
  if (!leading()) return NotLeading();
  Result<int64_t> tail = QueryCount(r, "tail", 0);
  if (!tail.ok()) return tail.status();
  Result<int64_t> after = QueryCount(r, "after", 0);
  if (!after.ok()) return after.status();
  Result<Json> task = GetTask(*store_, r.params[0]);
  if (!task.ok()) return task.status();
  const std::string id = task->value("id", ""), node = task->value("node", "");
  if (node.empty()) return Status::NotFound("task '" + id + "' has not been placed: no logs yet");
  Result<Json> stored = nodes_.Get(node);
  if (!stored.ok())
    return Status::NotFound("task '" + id + "' ran on node '" + node +
                            "', which was removed: its logs went with it");
  const std::string endpoint = stored->value("berth_node", Json::object()).value("endpoint", "");
  std::optional<std::string> credential = dispatcher_->CredentialOf(node);
  if (endpoint.empty() || !credential)
    return Status::NotFound("task '" + id + "' runs on node '" + node +
                            "', which is simulated: it has no logs");
  api::ApiClient client(endpoint, *credential, 10);
  // A job's task that ran again has its current run's output under the
  // run's id (RunIdOf).
  const std::string run = RunIdOf(id, task->value("attempt", int64_t{0}));
  Result<Json> lines =
      client.Call("GET", "/v1/tasks/" + run + "/logs?tail=" + std::to_string(*tail) +
                             "&after=" + std::to_string(*after));
  if (!lines.ok() && lines.status().code() != StatusCode::kNotFound)
    return Status::Unavailable("cannot read the logs of task '" + id + "' from node '" + node +
                               "': " + lines.status().message());
  if (!lines.ok()) return lines.status();
  (*lines)["task"] = id;
  (*lines)["node"] = node;
  return lines;
}

}  // namespace berth::daemon
