#include "daemon/registry/task_views.h"

#include <map>

#include "api/cluster_codec.h"
#include "api/lifecycle_codec.h"
#include "daemon/registry/class_registry.h"
#include "daemon/registry/job_parts.h"
#include "daemon/registry/stored_kind.h"
#include "orchestrator/orchestrator.h"

namespace berth::daemon {
namespace {

api::Json TaskView(const store::StoredObject& o) {
  api::Json view = StoredKind::View(o);
  view["id"] = o.id;
  if (!view.contains("desired_state")) view["desired_state"] = "running";
  if (const std::string service = view.value("service", ""); !service.empty()) {
    if (const uint64_t slot = view.value("slot", uint64_t{0}); slot != 0)
      view["name"] = service + "." + std::to_string(slot);
    else if (view.contains("node"))
      view["name"] = service + "." + view["node"].get<std::string>();
  }
  return view;
}

// Whether `id` is "<name>.<serial>": a task named `name`.
bool Named(std::string_view id, std::string_view name) {
  if (id.size() <= name.size() + 1 || !id.starts_with(name) || id[name.size()] != '.') return false;
  return id.find_first_not_of("0123456789", name.size() + 1) == std::string_view::npos;
}

// A job's task waiting for admission: its class, the class's running tasks
// against its entitlement, and the idle workers, as the last pass found them
// (loop/steps/admission.h). "" when that is not known.
std::string AdmissionWait(const store::Store& store, const std::string& job) {
  Result<std::optional<store::StoredObject>> status = store.Get("admission", "status");
  Result<std::optional<store::StoredObject>> stored_job = store.Get("job", job);
  Result<std::optional<store::StoredObject>> classes = ClassRegistry::Stored(store);
  if (!status.ok() || !status->has_value() || !stored_job.ok() || !stored_job->has_value() ||
      !classes.ok())
    return "";
  fairshare::Config config;
  if (classes->has_value()) {
    Result<fairshare::Config> decoded =
        ClassRegistry::ToConfig(api::Json::parse((*classes)->body, nullptr, false));
    if (!decoded.ok()) return "";
    config = std::move(*decoded);
  }
  const std::string requestor =
      api::Json::parse((*stored_job)->body, nullptr, false).value("requestor", "");
  const std::string& name = config.ClassName(config.ClassOf(requestor));
  const api::Json numbers = api::Json::parse((**status).body, nullptr, false);
  const api::Json of_class = numbers.value("classes", api::Json::object()).value(name, api::Json());
  if (!of_class.is_object()) return "";
  auto n = [](const api::Json& j, const char* key) {
    return std::to_string(j.value(key, int64_t{0}));
  };
  return "waiting for admission: class '" + name + "' (requestor '" + requestor + "') runs " +
         n(of_class, "running") + " of its entitlement of " + n(of_class, "entitlement") + " (" +
         n(of_class, "percent") + "% of " + n(numbers, "workers") + " workers), " +
         n(of_class, "waiting") + " of its tasks wait; " + n(numbers, "idle") + " workers idle";
}

// A service's task of an older version still meant to run: why the update
// has not replaced it yet, from the rollout's status. "" otherwise.
std::string UpdateWait(const store::Store& store, const api::Json& task) {
  if (!task.contains("service") || task.value("desired_state", "running") != "running") return "";
  const std::string id = task["service"];
  Result<std::optional<store::StoredObject>> service = store.Get("service", id);
  if (!service.ok() || !service->has_value()) return "";
  const api::Json body = api::Json::parse((*service)->body, nullptr, false);
  const uint64_t current = body.value("spec_version", uint64_t{0});
  const uint64_t own = task.value("spec_version", uint64_t{0});
  // A task of a version before a rebalance, or of the version a rollback
  // returned to, runs the current template.
  if (api::TemplateVersionsOf(body).RunsCurrent(own)) return "";
  std::string why = "runs spec version " + std::to_string(own) + "; the rollout of version " +
                    std::to_string(current) + " has not replaced it yet";
  Result<std::optional<store::StoredObject>> status = store.Get("update", id);
  if (status.ok() && status->has_value()) {
    const api::Json s = api::Json::parse((*status)->body, nullptr, false);
    why += " (" + s.value("state", "") + ": " + s.value("message", "") + ")";
  }
  return why;
}

}  // namespace

Result<api::Json> ListTasks(const store::Store& store, const TaskFilter& filter) {
  for (const auto& [name, value] :
       {std::pair{"state", &filter.state}, {"desired_state", &filter.desired_state}})
    if (!value->empty())
      if (Result<TaskState> parsed = ParseTaskState(*value); !parsed.ok())
        return Status::InvalidArgument(std::string(name) + ": " + parsed.status().message());
  const std::string& service = filter.service;
  int64_t incarnation = 0;
  if (!service.empty()) {
    Result<std::optional<store::StoredObject>> found = store.Get("service", service);
    if (!found.ok()) return found.status();
    if (found->has_value())
      incarnation = api::Json::parse((*found)->body, nullptr, false).value("incarnation", 0);
  }
  // A job's or service's tasks are named "<name>.<...>".
  const std::string& owner = service.empty() ? filter.job : service;
  Result<std::vector<store::StoredObject>> objects = ListTaskRecords(store, owner);
  if (!objects.ok()) return objects.status();
  api::Json tasks = api::Json::array();
  for (const store::StoredObject& o : *objects) {
    if (!service.empty() && orchestrator::SerialOf(o.id) < incarnation) continue;
    api::Json task = TaskView(o);
    if ((service.empty() || task.value("service", "") == service) &&
        (filter.job.empty() || task.value("job", "") == filter.job) &&
        (filter.node.empty() || task.value("node", "") == filter.node) &&
        (filter.state.empty() || task.value("state", "new") == filter.state) &&
        (filter.desired_state.empty() || task["desired_state"] == filter.desired_state))
      tasks.push_back(std::move(task));
  }
  return api::Json{{"tasks", std::move(tasks)}};
}

Result<api::Json> GetTask(const store::Store& store, std::string_view id_or_name) {
  Result<std::optional<store::StoredObject>> found = GetTaskRecord(store, id_or_name);
  if (!found.ok()) return found.status();
  if (found->has_value()) return TaskView(**found);
  Result<std::vector<store::StoredObject>> named = ListTaskRecords(store, id_or_name);
  if (!named.ok()) return named.status();
  const store::StoredObject* newest = nullptr;
  for (const store::StoredObject& o : *named)
    if (Named(o.id, id_or_name) &&
        (newest == nullptr || orchestrator::SerialOf(o.id) > orchestrator::SerialOf(newest->id)))
      newest = &o;
  if (newest == nullptr) return Status::NotFound("no task '" + std::string(id_or_name) + "'");
  return TaskView(*newest);
}

Result<api::Json> WhyTask(const store::Store& store, std::string_view id_or_name) {
  Result<api::Json> task = GetTask(store, id_or_name);
  if (!task.ok()) return task.status();
  api::Json why = {{"task", (*task)["id"]},
                   {"state", task->value("state", "pending")},
                   {"reason", task->value("message", "")}};
  if (why["state"] == "new" && task->contains("job"))
    if (std::string wait = AdmissionWait(store, (*task)["job"]); !wait.empty())
      why["reason"] = wait;
  if (std::string wait = UpdateWait(store, *task); !wait.empty()) why["reason"] = wait;
  if (task->contains("name")) why["name"] = (*task)["name"];
  if (task->contains("node")) why["node"] = (*task)["node"];
  return why;
}

namespace {

// The reservations of a task of `owner` (a service or job body) at
// `version`: its template's, or the previous one's for an older version.
Reservations ReservedBy(const api::Json& owner, uint64_t version) {
  const bool older =
      !api::TemplateVersionsOf(owner).RunsCurrent(version) && owner.contains("previous_task");
  TaskSpec spec;
  (void)api::DecodeTaskSpec(owner.value(older ? "previous_task" : "task", api::Json::object()), "",
                            &spec);
  return spec.reservations;
}

}  // namespace

Result<api::Json> NodeUsage(const store::Store& store, const api::Json& node) {
  Node decoded;
  api::Json placement = node;
  for (const char* berthd_field : {"slots", "berth_node", "revision"})
    placement.erase(berthd_field);
  BERTH_RETURN_IF_ERROR(api::DecodeNode(placement, "", &decoded));
  Result<std::vector<store::StoredObject>> tasks = store.List("task");
  if (!tasks.ok()) return tasks.status();
  std::map<std::string, api::Json> owners;  // services and jobs, read once each
  int64_t cpu = 0, memory = 0, count = 0;
  for (const store::StoredObject& o : *tasks) {
    const api::Json task = TaskView(o);
    const Result<TaskState> parsed = ParseTaskState(task.value("state", "new"));
    const TaskState state = parsed.ok() ? *parsed : TaskState::kNew;
    if (task.value("node", "") != decoded.id || state < TaskState::kAssigned ||
        state > TaskState::kRunning)
      continue;
    const bool of_job = task.contains("job");
    const std::string owner_id = task.value(of_job ? "job" : "service", "");
    auto [owner, added] = owners.try_emplace((of_job ? "job/" : "service/") + owner_id);
    if (added) {
      Result<std::optional<store::StoredObject>> found =
          store.Get(of_job ? "job" : "service", owner_id);
      if (found.ok() && found->has_value()) owner->second = api::Json::parse((*found)->body);
    }
    if (!owner->second.is_object()) continue;
    const Reservations r = ReservedBy(owner->second, task.value("spec_version", uint64_t{0}));
    cpu += r.milli_cpu;
    memory += r.memory_bytes;
    ++count;
  }
  return api::NodeUseOf(count, cpu, memory, decoded.resources);
}

}  // namespace berth::daemon
