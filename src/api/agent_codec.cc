#include "api/agent_codec.h"

#include <memory>

#include "api/cluster_codec.h"
#include "api/process_codec.h"
#include "core/names.h"

namespace berth::api {
namespace {

Json EncodeTask(const agent::PlacementTask& task) {
  Json out = {{"id", task.id}, {"priority", task.priority}, {"task", EncodeTaskSpec(*task.spec)}};
  Json edge = {{"max_distance_m", task.edge.max_distance_m},
               {"min_battery_percent", task.edge.min_battery_percent},
               {"min_capacity_mah", task.edge.min_capacity_mah}};
  if (task.edge.target) edge["target"] = {task.edge.target->lat_micro, task.edge.target->lon_micro};
  out["edge"] = std::move(edge);
  if (task.process != nullptr) {
    out["process"] = EncodeProcessSpec(*task.process);
    if (!task.run_id.empty()) out["run"] = task.run_id;
  }
  return out;
}

Status DecodeProcess(const Json& value, const std::string& path, agent::PlacementTask* task) {
  if (!value.is_object()) return FieldError(path, "expected an object");
  std::optional<executor::ProcessSpec> process;
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"command", "args", "env", "workdir", "stop_grace_period", "limits"}));
  BERTH_RETURN_IF_ERROR(DecodeProcessSpec(value, path, &process));
  if (!process) return FieldError(FieldPath(path, "command"), "required");
  task->process = std::make_shared<executor::ProcessSpec>(std::move(*process));
  return Status::Ok();
}

Status DecodeEdge(const Json& value, const std::string& path, agent::EdgeRequirements* edge) {
  BERTH_RETURN_IF_ERROR(CheckObject(
      value, path, {"target", "max_distance_m", "min_battery_percent", "min_capacity_mah"}));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "max_distance_m", path, ReadInteger, &edge->max_distance_m));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "min_battery_percent", path, ReadInteger, &edge->min_battery_percent));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "min_capacity_mah", path, ReadInteger, &edge->min_capacity_mah));
  if (auto target = value.find("target"); target != value.end()) {
    if (!target->is_array() || target->size() != 2)
      return FieldError(FieldPath(path, "target"), "expected [lat_micro, lon_micro]");
    agent::GeoPoint point;
    BERTH_RETURN_IF_ERROR(ReadInteger((*target)[0], FieldPath(path, "target"), &point.lat_micro));
    BERTH_RETURN_IF_ERROR(ReadInteger((*target)[1], FieldPath(path, "target"), &point.lon_micro));
    edge->target = point;
  }
  return Status::Ok();
}

Status DecodeTask(const Json& value, const std::string& path, agent::PlacementTask* task) {
  BERTH_RETURN_IF_ERROR(
      CheckObject(value, path, {"id", "priority", "task", "edge", "process", "run"}));
  BERTH_RETURN_IF_ERROR(RequireField(value, "id", path, ReadTaskId, &task->id));
  BERTH_RETURN_IF_ERROR(ReadField(value, "run", path, ReadRunId, &task->run_id));
  if (!task->run_id.empty() && TaskIdOfRun(task->run_id) != task->id)
    return FieldError(FieldPath(path, "run"), "expected a run of task '" + task->id + "'");
  if (value.contains("process"))
    BERTH_RETURN_IF_ERROR(DecodeProcess(value["process"], FieldPath(path, "process"), task));
  BERTH_RETURN_IF_ERROR(ReadField(value, "priority", path, ReadInteger, &task->priority));
  auto spec = std::make_shared<TaskSpec>();
  if (value.contains("task"))
    BERTH_RETURN_IF_ERROR(DecodeTaskSpec(value["task"], FieldPath(path, "task"), spec.get()));
  task->spec = std::move(spec);
  if (value.contains("edge"))
    BERTH_RETURN_IF_ERROR(DecodeEdge(value["edge"], FieldPath(path, "edge"), &task->edge));
  return Status::Ok();
}

// Task ids, or node ids (an id is a task id of one part).
Status ReadIds(const Json& value, const std::string& path, std::vector<std::string>* out) {
  return ReadList(value, path, ReadTaskId, out);
}

Status ReadIndex(const Json& value, const std::string& path, uint32_t* out) {
  uint64_t index = 0;
  BERTH_RETURN_IF_ERROR(ReadUnsigned(value, path, &index));
  if (index > UINT32_MAX) return FieldError(path, "node index out of range");
  *out = static_cast<uint32_t>(index);
  return Status::Ok();
}

}  // namespace

Json EncodeTaskSpec(const TaskSpec& spec) {
  Json out = Json::object();
  const Reservations& r = spec.reservations;
  if (r.milli_cpu != 0) out["resources"]["cpu"] = std::to_string(r.milli_cpu) + "m";
  if (r.memory_bytes != 0) out["resources"]["memory"] = r.memory_bytes;
  for (const GenericRequest& g : r.generic) out["resources"]["generic"][g.kind] = g.count;
  if (!spec.constraints.empty()) out["constraints"] = spec.constraints;
  for (const PlacementPreference& p : spec.preferences) {
    const bool pack = p.kind == PlacementPreference::Kind::kPack;
    Json level = {{pack ? "pack" : "spread", p.descriptor}};
    for (const auto& [value, weight] : p.weights) level["weights"][value] = weight;
    if (p.other_weight != 0) level["weights"]["*"] = p.other_weight;
    out["preferences"].push_back(std::move(level));
  }
  for (const std::string& c : spec.preferred_constraints)
    out["preferences"].push_back({{"prefer", c}});
  for (const ServiceAffinity& a : spec.affinities)
    out["affinity"].push_back({{"service", a.service}, {"anti", a.anti}, {"soft", a.soft}});
  for (const Platform& p : spec.platforms)
    out["platforms"].push_back({{"os", p.os}, {"arch", p.arch}});
  for (const PortSpec& p : spec.ports)
    if (p.published != 0)
      out["ports"].push_back({{"protocol", ToString(p.protocol)},
                              {"published", p.published},
                              {"mode", p.host_mode ? "host" : "ingress"}});
  if (spec.max_replicas_per_node != 0) out["max_replicas_per_node"] = spec.max_replicas_per_node;
  if (!spec.networks.empty()) out["networks"] = spec.networks;
  if (!spec.volume_drivers.empty()) out["volume_drivers"] = spec.volume_drivers;
  if (!spec.log_driver.empty()) out["log_driver"] = spec.log_driver;
  return out;
}

Json EncodeSampleRequest(const agent::SampleRequest& request) {
  Json out = {
      {"task", EncodeTask(request.task)},
      {"basis_points", request.basis_points},
      {"budget_ms", std::chrono::duration_cast<std::chrono::milliseconds>(request.budget).count()}};
  if (!request.node_id.empty()) out["node"] = request.node_id;
  return out;
}

Result<agent::SampleRequest> DecodeSampleRequest(const Json& body) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {"task", "basis_points", "budget_ms", "node"}));
  agent::SampleRequest request;
  BERTH_RETURN_IF_ERROR(RequireField(body, "task", "", DecodeTask, &request.task));
  BERTH_RETURN_IF_ERROR(ReadField(body, "node", "", ReadId, &request.node_id));
  BERTH_RETURN_IF_ERROR(ReadField(body, "basis_points", "", ReadInteger, &request.basis_points));
  int64_t budget_ms = 50;
  BERTH_RETURN_IF_ERROR(ReadField(body, "budget_ms", "", ReadInteger, &budget_ms));
  if (request.basis_points < 0 || request.basis_points > 10'000)
    return FieldError("basis_points", "expected 0 to 10000");
  if (budget_ms < 0 || budget_ms > 60'000) return FieldError("budget_ms", "expected 0 to 60000");
  request.budget = std::chrono::milliseconds(budget_ms);
  return request;
}

Json EncodeSampleResponse(const agent::SampleResponse& response) {
  Json nodes = Json::array();
  for (const agent::NodeSample& n : response.nodes) {
    Json row = Json::array({n.node_id, n.node_index, n.score_sum, n.weight_sum, n.free_milli_cpu,
                            n.free_memory_bytes, n.total_milli_cpu, n.total_memory_bytes});
    // A ninth element only when set, so rows without spread stay as before.
    if (!n.spread_value.empty()) row.push_back(n.spread_value);
    nodes.push_back(std::move(row));
  }
  Json out = {{"nodes", std::move(nodes)}, {"looked_at", response.looked_at}};
  if (!response.reason.empty()) out["reason"] = response.reason;
  return out;
}

Result<agent::SampleResponse> DecodeSampleResponse(const Json& body, const std::string& agent_id) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {"nodes", "looked_at", "reason"}));
  agent::SampleResponse response;
  BERTH_RETURN_IF_ERROR(ReadField(body, "reason", "", ReadString, &response.reason));
  if (body.contains("looked_at") && body["looked_at"].is_number_unsigned())
    response.looked_at = body["looked_at"].get<uint32_t>();
  if (!body.contains("nodes") || !body["nodes"].is_array())
    return FieldError("nodes", "expected an array");
  for (const Json& n : body["nodes"]) {
    if (!n.is_array() || (n.size() != 8 && n.size() != 9) || !n[0].is_string() ||
        (n.size() == 9 && !n[8].is_string()))
      return FieldError("nodes", "expected 8-element node rows (9 with a spread value)");
    for (size_t i = 1; i < 8; ++i)
      if (!n[i].is_number_integer())
        return FieldError("nodes", "expected integers after the node id");
    response.nodes.push_back({agent_id, n[0], 0, n[1].get<uint32_t>(), n[2], n[3], n[4], n[5], n[6],
                              n[7], n.size() == 9 ? n[8].get<std::string>() : std::string()});
  }
  return response;
}

Json EncodeCommitRequest(const agent::CommitRequest& request) {
  return {{"task", EncodeTask(request.task)},
          {"node_index", request.node_index},
          {"node_id", request.node_id}};
}

Result<agent::CommitRequest> DecodeCommitRequest(const Json& body) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {"task", "node_index", "node_id"}));
  agent::CommitRequest request;
  BERTH_RETURN_IF_ERROR(RequireField(body, "task", "", DecodeTask, &request.task));
  BERTH_RETURN_IF_ERROR(ReadField(body, "node_index", "", ReadIndex, &request.node_index));
  BERTH_RETURN_IF_ERROR(RequireField(body, "node_id", "", ReadId, &request.node_id));
  return request;
}

Json EncodeCommitResponse(const agent::CommitResponse& response) {
  const char* outcome = response.outcome == agent::CommitOutcome::kBound      ? "bound"
                        : response.outcome == agent::CommitOutcome::kConflict ? "conflict"
                                                                              : "error";
  return {{"outcome", outcome}, {"reason", response.reason}};
}

Result<agent::CommitResponse> DecodeCommitResponse(const Json& body) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {"outcome", "reason"}));
  std::string outcome;
  agent::CommitResponse response{agent::CommitOutcome::kError, ""};
  BERTH_RETURN_IF_ERROR(RequireField(body, "outcome", "", ReadString, &outcome));
  BERTH_RETURN_IF_ERROR(ReadField(body, "reason", "", ReadString, &response.reason));
  if (outcome == "bound")
    response.outcome = agent::CommitOutcome::kBound;
  else if (outcome == "conflict")
    response.outcome = agent::CommitOutcome::kConflict;
  else if (outcome != "error")
    return FieldError("outcome", "expected bound, conflict or error");
  return response;
}

Json EncodeRunsBatch(const agent::RunsBatch& batch) {
  Json runs = Json::array();
  for (const agent::RunReport& r : batch.runs)
    runs.push_back({{"run", r.run},
                    {"node", r.node},
                    {"state", ToString(r.state)},
                    {"message", r.message},
                    {"ran_ms", r.ran_ms}});
  return {{"instance", batch.instance},
          {"sequence", batch.sequence},
          {"full", batch.full},
          {"nodes", batch.nodes},
          {"runs", std::move(runs)}};
}

namespace {

Status ReadRunReport(const Json& value, const std::string& path, agent::RunReport* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"run", "node", "state", "message", "ran_ms"}));
  BERTH_RETURN_IF_ERROR(RequireField(value, "run", path, ReadRunId, &out->run));
  BERTH_RETURN_IF_ERROR(RequireField(value, "node", path, ReadId, &out->node));
  BERTH_RETURN_IF_ERROR(
      RequireField(value, "state", path, EnumReader(ParseTaskState), &out->state));
  if (out->state < TaskState::kRunning || out->state > TaskState::kRejected)
    return FieldError(FieldPath(path, "state"),
                      "expected running, complete, failed, rejected or shutdown");
  BERTH_RETURN_IF_ERROR(ReadField(value, "message", path, ReadShownText, &out->message));
  BERTH_RETURN_IF_ERROR(ReadField(value, "ran_ms", path, ReadInteger, &out->ran_ms));
  return Status::Ok();
}

}  // namespace

Result<agent::RunsBatch> DecodeRunsBatch(const Json& body) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {"instance", "sequence", "full", "nodes", "runs"}));
  agent::RunsBatch batch;
  BERTH_RETURN_IF_ERROR(RequireField(body, "instance", "", ReadString, &batch.instance));
  BERTH_RETURN_IF_ERROR(ReadField(body, "sequence", "", ReadInteger, &batch.sequence));
  BERTH_RETURN_IF_ERROR(ReadField(body, "full", "", ReadBool, &batch.full));
  BERTH_RETURN_IF_ERROR(ReadField(body, "nodes", "", ReadIndex, &batch.nodes));
  BERTH_RETURN_IF_ERROR(ReadField(
      body, "runs", "",
      [](const Json& v, const std::string& path, std::vector<agent::RunReport>* out) {
        return ReadList(v, path, ReadRunReport, out);
      },
      &batch.runs));
  return batch;
}

Json EncodeIdList(const char* field, const std::vector<std::string>& ids) { return {{field, ids}}; }

Result<std::vector<std::string>> DecodeIdList(const Json& body, const char* field) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {field}));
  std::vector<std::string> ids;
  BERTH_RETURN_IF_ERROR(RequireField(body, field, "", ReadIds, &ids));
  return ids;
}

Json EncodeEligibleRequest(const TaskSpec& spec) { return {{"task", EncodeTaskSpec(spec)}}; }

Result<TaskSpec> DecodeEligibleRequest(const Json& body) {
  BERTH_RETURN_IF_ERROR(CheckObject(body, "", {"task"}));
  TaskSpec spec;
  BERTH_RETURN_IF_ERROR(RequireField(body, "task", "", DecodeTaskSpec, &spec));
  return spec;
}

}  // namespace berth::api
