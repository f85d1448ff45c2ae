#include "daemon/service_registry.h"

#include "api/plan_codec.h"

namespace berth::daemon {
namespace {

constexpr const char* kKind = "service";

api::Json View(const store::StoredObject& object) {
  api::Json service = api::Json::parse(object.body);
  service["revision"] = object.revision;
  return service;
}

// "run": {"duration": seconds, "outcome": "complete" | "fail"}, how the
// simulated executor runs each task; stored as {"duration_ms", "outcome"}.
Result<api::Json> ReadRun(const api::Json& run) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(run, "run", {"duration", "outcome", "duration_ms"}));
  Duration duration{0};
  if (run.contains("duration_ms")) {
    int64_t ms = 0;
    BERTH_RETURN_IF_ERROR(api::ReadInteger(run["duration_ms"], "run.duration_ms", &ms));
    duration = std::chrono::milliseconds(ms);
  }
  BERTH_RETURN_IF_ERROR(api::ReadField(run, "duration", "run", api::ReadSeconds, &duration));
  const std::string outcome = run.value("outcome", "complete");
  if (outcome != "complete" && outcome != "fail")
    return api::FieldError("run.outcome", "expected complete or fail, got '" + outcome + "'");
  return api::Json{{"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(duration).count()},
                   {"outcome", outcome}};
}

// Validates with the placement-document decoder; its messages start with
// "services[0]", which means nothing to an API caller, so that is cut.
Status Validate(const api::Json& stored) {
  api::Json service = stored;
  service.erase("run");
  Result<api::PlacementPlanInput> decoded =
      api::DecodePlacementDocument(api::Json{{"services", api::Json::array({service})}}, Timestamp{});
  if (decoded.ok()) return Status::Ok();
  std::string message = decoded.status().message();
  for (const char* prefix : {"services[0]: ", "services[0]."})
    if (message.starts_with(prefix)) message.erase(0, std::string_view(prefix).size());
  return Status::InvalidArgument(message);
}

Result<store::StoredObject> Load(const store::Store& store, std::string_view id) {
  Result<std::optional<store::StoredObject>> found = store.Get(kKind, id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::NotFound("no service '" + std::string(id) + "'");
  return std::move(**found);
}

}  // namespace

Result<api::Json> ServiceRegistry::Create(const api::Json& service) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(service, "", {"id", "mode", "replicas", "task", "run"}));
  api::Json stored = service;
  stored["spec_version"] = 1;
  if (service.contains("run")) {
    Result<api::Json> run = ReadRun(service["run"]);
    if (!run.ok()) return run.status();
    stored["run"] = *run;
  }
  if (!stored.contains("task")) stored["task"] = api::Json::object();
  BERTH_RETURN_IF_ERROR(Validate(stored));
  const std::string id = stored["id"].get<std::string>();
  Result<int64_t> committed = store_.Commit({store::Write::Create(kKind, id, stored.dump())});
  if (!committed.ok()) return committed.status();
  return View({kKind, id, stored.dump(), *committed});
}

Result<api::Json> ServiceRegistry::Get(std::string_view id) const {
  Result<store::StoredObject> object = Load(store_, id);
  if (!object.ok()) return object.status();
  return View(*object);
}

Result<api::Json> ServiceRegistry::List() const {
  Result<std::vector<store::StoredObject>> objects = store_.List(kKind);
  if (!objects.ok()) return objects.status();
  api::Json services = api::Json::array();
  for (const store::StoredObject& o : *objects) services.push_back(View(o));
  return api::Json{{"services", std::move(services)}};
}

Result<api::Json> ServiceRegistry::Update(std::string_view id, const api::Json& patch) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(patch, "", {"replicas", "task"}));
  Result<store::StoredObject> object = Load(store_, id);
  if (!object.ok()) return object.status();
  api::Json service = api::Json::parse(object->body);
  if (patch.contains("replicas")) service["replicas"] = patch["replicas"];
  if (patch.contains("task") && patch["task"] != service["task"]) {
    service["task"] = patch["task"];
    service["spec_version"] = service["spec_version"].get<uint64_t>() + 1;
  }
  BERTH_RETURN_IF_ERROR(Validate(service));
  store::Write write = store::Write::Put(kKind, object->id, service.dump());
  write.IfRevision(object->revision);
  Result<int64_t> committed = store_.Commit({write});
  if (!committed.ok()) return committed.status();
  return View({kKind, object->id, service.dump(), *committed});
}

Status ServiceRegistry::Remove(std::string_view id) {
  Result<store::StoredObject> object = Load(store_, id);
  if (!object.ok()) return object.status();
  store::Write write = store::Write::Delete(kKind, object->id);
  write.IfRevision(object->revision);
  Result<int64_t> committed = store_.Commit({write});
  return committed.ok() ? Status::Ok() : committed.status();
}

}  // namespace berth::daemon
