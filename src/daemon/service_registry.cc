#include "daemon/service_registry.h"

#include "api/lifecycle_codec.h"
#include "api/plan_codec.h"
#include "daemon/simulated_run.h"

namespace berth::daemon {
namespace {

// Validates with the placement-document decoder; its messages start with
// "services[0]", which means nothing to an API caller, so that is cut. A
// valid replica count is checked and then left out: the decoder would make
// every replica (60 ms for 100,000), and a count says nothing more.
Status Validate(const api::Json& stored) {
  api::Json service = stored;
  for (const char* lifecycle : {"run", "restart_policy", "incarnation"}) service.erase(lifecycle);
  if (auto replicas = service.find("replicas"); replicas != service.end() &&
                                                replicas->is_number_unsigned() &&
                                                replicas->get<uint64_t>() <= api::kMaxReplicas)
    *replicas = 0;
  Result<api::PlacementPlanInput> decoded = api::DecodePlacementDocument(
      api::Json{{"services", api::Json::array({service})}}, Timestamp{});
  if (decoded.ok()) return Status::Ok();
  std::string message = decoded.status().message();
  for (const char* prefix : {"services[0]: ", "services[0]."})
    if (message.starts_with(prefix)) message.erase(0, std::string_view(prefix).size());
  return Status::InvalidArgument(message);
}

// The lifecycle fields of a create or update, checked and written in full
// into the stored service.
Status PutLifecycle(const api::Json& body, api::Json* stored) {
  if (auto it = body.find("restart_policy"); it != body.end()) {
    orchestrator::RestartPolicy policy;
    BERTH_RETURN_IF_ERROR(api::DecodeRestartPolicy(*it, "restart_policy", &policy));
    (*stored)["restart_policy"] = api::EncodeRestartPolicy(policy);
  }
  return Status::Ok();
}

}  // namespace

Result<api::Json> ServiceRegistry::Create(const api::Json& service) {
  BERTH_RETURN_IF_ERROR(
      api::CheckObject(service, "", {"id", "mode", "replicas", "task", "run", "restart_policy"}));
  api::Json stored = service;
  stored["spec_version"] = 1;
  // Read before the commit that creates it: every task of an earlier
  // service of this name has a lower serial (StoredService::incarnation).
  stored["incarnation"] = store_.revision();
  if (!stored.contains("restart_policy"))
    stored["restart_policy"] = api::EncodeRestartPolicy(orchestrator::RestartPolicy());
  BERTH_RETURN_IF_ERROR(PutLifecycle(service, &stored));
  if (service.contains("run")) {
    BERTH_RETURN_IF_ERROR(api::CheckObject(service["run"], "run", {"duration", "outcome"}));
    Result<api::Json> run = ReadSimulatedRun(service["run"], "run");
    if (!run.ok()) return run.status();
    stored["run"] = *run;
  }
  if (!stored.contains("task")) stored["task"] = api::Json::object();
  BERTH_RETURN_IF_ERROR(Validate(stored));
  const std::string id = stored["id"];
  return services_.Create(id, stored, {ClaimWorkloadName(id, "service")});
}

Result<api::Json> ServiceRegistry::Get(std::string_view id) const { return services_.Get(id); }

Result<api::Json> ServiceRegistry::List() const { return services_.List("services"); }

Result<api::Json> ServiceRegistry::Update(std::string_view id, const api::Json& patch) {
  BERTH_RETURN_IF_ERROR(
      api::CheckObject(patch, "", {"replicas", "task", "restart_policy", "force"}));
  if (auto force = patch.find("force"); force != patch.end() && !force->is_boolean())
    return api::TypeError(*force, "force", "true or false");
  Result<store::StoredObject> object = services_.Load(id);
  if (!object.ok()) return object.status();
  api::Json service = api::Json::parse(object->body);
  if (patch.contains("replicas")) service["replicas"] = patch["replicas"];
  BERTH_RETURN_IF_ERROR(PutLifecycle(patch, &service));
  if ((patch.contains("task") && patch["task"] != service["task"]) || patch.value("force", false)) {
    if (patch.contains("task")) service["task"] = patch["task"];
    service["spec_version"] = service["spec_version"].get<uint64_t>() + 1;
  }
  BERTH_RETURN_IF_ERROR(Validate(service));
  return services_.Replace(*object, service);
}

Status ServiceRegistry::Remove(std::string_view id) {
  return services_.Remove(id, {ReleaseWorkloadName(std::string(id))});
}

}  // namespace berth::daemon
