#include "api/plan_codec.h"

#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "api/cluster_codec.h"
#include "api/json_fields.h"
#include "core/names.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/service_tally.h"

namespace berth::api {
namespace {

using placement::kNoNode;

enum class ServiceMode { kReplicated, kGlobal };

struct ServiceEntry {
  std::string id;
  std::optional<uint64_t> spec_version;
  ServiceMode mode = ServiceMode::kReplicated;
  std::optional<uint64_t> replicas;
  std::shared_ptr<const TaskSpec> spec;
};

Status ReadMode(const Json& value, const std::string& path, ServiceMode* out) {
  std::string mode;
  BERTH_RETURN_IF_ERROR(ReadString(value, path, &mode));
  if (mode == "replicated") {
    *out = ServiceMode::kReplicated;
  } else if (mode == "global") {
    *out = ServiceMode::kGlobal;
  } else {
    return FieldError(path,
                      "invalid mode " + Quoted(mode) + " (expected one of replicated, global)");
  }
  return Status::Ok();
}

Status ReadVersion(const Json& value, const std::string& path, std::optional<uint64_t>* out) {
  uint64_t version = 0;
  BERTH_RETURN_IF_ERROR(ReadUnsigned(value, path, &version));
  *out = version;
  return Status::Ok();
}

// A task template, decoded into a spec shared by every task that uses it.
Status ReadSharedSpec(const Json& value, const std::string& path,
                      std::shared_ptr<const TaskSpec>* out) {
  auto spec = std::make_shared<TaskSpec>();
  BERTH_RETURN_IF_ERROR(DecodeTaskSpec(value, path, spec.get()));
  *out = std::move(spec);
  return Status::Ok();
}

Status DecodeService(const Json& value, const std::string& path, ServiceEntry* out) {
  BERTH_RETURN_IF_ERROR(
      CheckObject(value, path, {"id", "spec_version", "mode", "replicas", "task"}));
  ServiceEntry s;
  BERTH_RETURN_IF_ERROR(RequireField(value, "id", path, ReadId, &s.id));
  BERTH_RETURN_IF_ERROR(ReadField(value, "spec_version", path, ReadVersion, &s.spec_version));
  BERTH_RETURN_IF_ERROR(ReadField(value, "mode", path, ReadMode, &s.mode));
  uint64_t replicas = 0;
  BERTH_RETURN_IF_ERROR(ReadField(value, "replicas", path, ReadUnsigned, &replicas));
  if (value.contains("replicas")) {
    if (s.mode == ServiceMode::kGlobal)
      return FieldError(FieldPath(path, "replicas"), "a global service has no replica count");
    if (replicas > kMaxReplicas)
      return FieldError(
          FieldPath(path, "replicas"),
          "at most " + std::to_string(kMaxReplicas) + " replicas, got " + std::to_string(replicas));
    s.replicas = replicas;
  }
  s.spec = std::make_shared<const TaskSpec>();
  BERTH_RETURN_IF_ERROR(ReadField(value, "task", path, ReadSharedSpec, &s.spec));
  *out = std::move(s);
  return Status::Ok();
}

// The decoder's working state: what has been read so far, for the checks that
// span objects (unique ids, references to nodes and services).
class PlacementDecoder {
 public:
  explicit PlacementDecoder(Timestamp default_now) { input_.now = default_now; }

  Result<PlacementPlanInput> Decode(const Json& doc);

 private:
  Status DecodeNodes(const Json& value, const std::string& path);
  Status DecodeServices(const Json& value, const std::string& path);
  Status DecodeTasks(const Json& value, const std::string& path);
  Status DecodeTask(const Json& value, const std::string& path);
  std::map<std::string_view, orchestrator::ServiceTally> Tallies() const;
  void GenerateReplicas(const ServiceEntry& service, const orchestrator::ServiceTally& tally);
  void GenerateGlobalTasks(const ServiceEntry& service, const orchestrator::ServiceTally& tally);
  Task NewPendingTask(const ServiceEntry& service, std::string id) const;

  PlacementPlanInput input_;
  std::set<std::string, std::less<>> node_ids_;
  std::set<std::string, std::less<>> task_ids_;
  std::vector<ServiceEntry> services_;
  std::map<std::string, size_t, std::less<>> service_index_;
};

Result<PlacementPlanInput> PlacementDecoder::Decode(const Json& doc) {
  BERTH_RETURN_IF_ERROR(CheckObject(doc, "", {"now", "nodes", "services", "tasks"}));
  BERTH_RETURN_IF_ERROR(ReadField(doc, "now", "", ReadTime, &input_.now));
  if (auto it = doc.find("nodes"); it != doc.end())
    BERTH_RETURN_IF_ERROR(DecodeNodes(*it, "nodes"));
  if (auto it = doc.find("services"); it != doc.end())
    BERTH_RETURN_IF_ERROR(DecodeServices(*it, "services"));
  if (auto it = doc.find("tasks"); it != doc.end())
    BERTH_RETURN_IF_ERROR(DecodeTasks(*it, "tasks"));
  std::map<std::string_view, orchestrator::ServiceTally> tallies = Tallies();
  for (const ServiceEntry& service : services_) {
    const orchestrator::ServiceTally& tally = tallies[service.id];
    if (service.mode == ServiceMode::kGlobal)
      GenerateGlobalTasks(service, tally);
    else if (service.replicas)
      GenerateReplicas(service, tally);
  }
  return std::move(input_);
}

Status PlacementDecoder::DecodeNodes(const Json& value, const std::string& path) {
  BERTH_RETURN_IF_ERROR(CheckArray(value, path));
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string item = IndexPath(path, i);
    Node node;
    BERTH_RETURN_IF_ERROR(DecodeNode(value[i], item, &node));
    if (!node_ids_.insert(node.id).second)
      return FieldError(FieldPath(item, "id"), "duplicate node id '" + node.id + "'");
    input_.nodes.push_back(std::move(node));
  }
  return Status::Ok();
}

Status PlacementDecoder::DecodeServices(const Json& value, const std::string& path) {
  BERTH_RETURN_IF_ERROR(CheckArray(value, path));
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string item = IndexPath(path, i);
    ServiceEntry service;
    BERTH_RETURN_IF_ERROR(DecodeService(value[i], item, &service));
    if (!service_index_.try_emplace(service.id, services_.size()).second)
      return FieldError(FieldPath(item, "id"), "duplicate service id '" + service.id + "'");
    services_.push_back(std::move(service));
  }
  return Status::Ok();
}

Status PlacementDecoder::DecodeTasks(const Json& value, const std::string& path) {
  BERTH_RETURN_IF_ERROR(CheckArray(value, path));
  for (size_t i = 0; i < value.size(); ++i)
    BERTH_RETURN_IF_ERROR(DecodeTask(value[i], IndexPath(path, i)));
  return Status::Ok();
}

// A listed task. With a service it inherits the service's template and spec
// version; without one it is a one-off task and may bring its own template.
Status PlacementDecoder::DecodeTask(const Json& value, const std::string& path) {
  BERTH_RETURN_IF_ERROR(CheckObject(
      value, path,
      {"id", "service", "node", "state", "desired_state", "spec_version", "updated_at", "task"}));
  Task task;
  BERTH_RETURN_IF_ERROR(RequireField(value, "id", path, ReadTaskId, &task.id));
  if (!task_ids_.insert(task.id).second)
    return FieldError(FieldPath(path, "id"), "duplicate task id '" + task.id + "'");
  BERTH_RETURN_IF_ERROR(ReadField(value, "service", path, ReadId, &task.service_id));
  BERTH_RETURN_IF_ERROR(ReadField(value, "node", path, ReadId, &task.node_id));
  BERTH_RETURN_IF_ERROR(ReadField(value, "state", path, EnumReader(ParseTaskState), &task.state));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "desired_state", path, EnumReader(ParseTaskState), &task.desired_state));
  BERTH_RETURN_IF_ERROR(ReadField(value, "updated_at", path, ReadTime, &task.updated_at));
  if (!task.node_id.empty() && !node_ids_.contains(task.node_id))
    return FieldError(FieldPath(path, "node"), "unknown node '" + task.node_id + "'");
  if (task.state > TaskState::kPending && task.state <= TaskState::kRunning && task.node_id.empty())
    return FieldError(FieldPath(path, "node"),
                      "a task in state " + std::string(ToString(task.state)) + " needs a node");
  bool global = false;
  if (!task.service_id.empty()) {
    auto it = service_index_.find(task.service_id);
    if (it == service_index_.end())
      return FieldError(FieldPath(path, "service"), "unknown service '" + task.service_id + "'");
    const ServiceEntry& service = services_[it->second];
    if (value.contains("task"))
      return FieldError(FieldPath(path, "task"),
                        "a task of a service uses the service's template; remove 'task'");
    task.spec = service.spec;
    task.spec_version = service.spec_version;
    global = service.mode == ServiceMode::kGlobal;
    if (global && task.state == TaskState::kPending && task.node_id.empty())
      return FieldError(FieldPath(path, "node"), "a pending task of a global service needs a node");
  } else {
    std::shared_ptr<const TaskSpec> spec = std::make_shared<const TaskSpec>();
    BERTH_RETURN_IF_ERROR(ReadField(value, "task", path, ReadSharedSpec, &spec));
    task.spec = std::move(spec);
  }
  BERTH_RETURN_IF_ERROR(ReadField(value, "spec_version", path, ReadVersion, &task.spec_version));
  const bool preassigned = global || (task.state == TaskState::kPending && !task.node_id.empty());
  input_.tasks.push_back({std::move(task), preassigned});
  return Status::Ok();
}

// Every listed task of a service in that service's tally, counted as
// berthd counts the tasks it holds, so that both make the same tasks.
std::map<std::string_view, orchestrator::ServiceTally> PlacementDecoder::Tallies() const {
  std::map<std::string_view, orchestrator::ServiceTally> tallies;
  for (const ServiceEntry& service : services_)
    tallies[service.id].global = service.mode == ServiceMode::kGlobal;
  for (const PlannedTask& planned : input_.tasks) {
    const Task& t = planned.task;
    const auto it = tallies.find(t.service_id);
    if (it == tallies.end()) continue;
    const std::optional<uint64_t> n = orchestrator::NumberIn(t.service_id, t.id);
    it->second.Add({it->second.FlagsOf(t.state, t.desired_state, !t.node_id.empty()),
                    n ? static_cast<int32_t>(*n) : -1},
                   t.node_id);
  }
  return tallies;
}

Task PlacementDecoder::NewPendingTask(const ServiceEntry& service, std::string id) const {
  Task task;
  task.id = std::move(id);
  task.service_id = service.id;
  task.spec_version = service.spec_version;
  task.state = TaskState::kPending;
  task.updated_at = input_.now;
  task.spec = service.spec;
  return task;
}

// Missing replicas become pending tasks "<service>.<n>", lowest free n first;
// n is free when no task of the document has that id.
void PlacementDecoder::GenerateReplicas(const ServiceEntry& service,
                                        const orchestrator::ServiceTally& tally) {
  for (std::string& id :
       orchestrator::NewReplicaIds(service.id, tally, *service.replicas,
                                   [&](const std::string& t) { return task_ids_.contains(t); })) {
    task_ids_.insert(id);
    input_.tasks.push_back({NewPendingTask(service, std::move(id)), false});
  }
}

// One preassigned pending task per node the tally does not cover (no
// runnable task of the service there), in node order, named by GlobalTaskId.
void PlacementDecoder::GenerateGlobalTasks(const ServiceEntry& service,
                                           const orchestrator::ServiceTally& tally) {
  for (const Node& node : input_.nodes) {
    if (tally.covered.contains(node.id)) continue;
    std::string id = orchestrator::GlobalTaskId(
        service.id, node.id, [&](const std::string& t) { return task_ids_.contains(t); });
    task_ids_.insert(id);
    Task task = NewPendingTask(service, std::move(id));
    task.node_id = node.id;
    input_.tasks.push_back({std::move(task), true});
  }
}

}  // namespace

Result<PlacementPlanInput> DecodePlacementDocument(const nlohmann::json& doc,
                                                   Timestamp default_now) {
  return PlacementDecoder(default_now).Decode(doc);
}

std::string NotScheduledReason(const Task& task) {
  if (task.desired_state <= TaskState::kComplete) return "";
  return "not scheduled: desired state is " + std::string(ToString(task.desired_state));
}

nlohmann::ordered_json EncodePlacementResult(const PlacementPlanInput& input,
                                             const placement::ClusterState& state,
                                             const placement::PassResult& result) {
  using OJson = nlohmann::ordered_json;
  OJson assignments = OJson::array();
  std::map<std::string_view, std::string_view> pending_reason;
  for (const placement::Decision& d : result.decisions) {
    const placement::TaskRecord& task = state.task(d.task);
    if (d.node == kNoNode) {
      pending_reason[task.id] = result.MessageOf(d);
      continue;
    }
    OJson entry = {{"task", task.id}, {"node", state.node(d.node).node().id}};
    // Only a placement that could not honour a soft constraint says more.
    if (d.message > 1) entry["message"] = result.MessageOf(d);
    if (!task.claims.empty()) {
      OJson generic = OJson::object();
      for (const GenericClaim& claim : task.claims) generic[claim.kind].push_back(claim.name);
      entry["generic_resources"] = std::move(generic);
    }
    assignments.push_back(std::move(entry));
  }
  OJson pending = OJson::array();
  for (const PlannedTask& planned : input.tasks) {
    if (planned.task.state != TaskState::kPending) continue;
    const std::string not_scheduled = NotScheduledReason(planned.task);
    if (!not_scheduled.empty()) {
      pending.push_back({{"task", planned.task.id}, {"reason", not_scheduled}});
    } else if (auto it = pending_reason.find(planned.task.id); it != pending_reason.end()) {
      pending.push_back({{"task", planned.task.id}, {"reason", it->second}});
    }
  }
  return OJson{{"assignments", std::move(assignments)}, {"pending", std::move(pending)}};
}

Result<PlacementPlan> PlanPlacement(const nlohmann::json& doc, Timestamp default_now,
                                    const placement::SchedulerOptions& options) {
  Result<PlacementPlanInput> input = DecodePlacementDocument(doc, default_now);
  if (!input.ok()) return input.status();
  placement::ClusterState state;
  for (const Node& node : input->nodes) {
    Result<placement::NodeIndex> added = state.AddNode(node);
    if (!added.ok()) return added.status();
  }
  for (const PlannedTask& planned : input->tasks) {
    Result<placement::TaskIndex> added = state.AddTask(planned.task, planned.preassigned);
    if (!added.ok()) return added.status();
  }
  placement::Scheduler scheduler(state, options);
  const placement::PassResult result = scheduler.SchedulePending(input->now);
  nlohmann::ordered_json output = EncodePlacementResult(*input, state, result);
  return PlacementPlan{std::move(*input), std::move(output)};
}

}  // namespace berth::api
