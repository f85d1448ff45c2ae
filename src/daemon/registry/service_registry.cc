#include "daemon/registry/service_registry.h"

#include <map>
#include <optional>

#include "api/cluster_codec.h"
#include "api/lifecycle_codec.h"
#include "api/plan_codec.h"
#include "daemon/loop/simulated_run.h"

namespace berth::daemon {
namespace {

// Validates with the placement-document decoder; its messages start with
// "services[0]", which means nothing to an API caller, so that is cut. A
// valid replica count is checked and then left out: the decoder would make
// every replica (60 ms for 100,000), and a count says nothing more.
Status Validate(const api::Json& stored) {
  api::Json service = stored;
  for (const char* field : ServiceRegistry::kBerthdFields) service.erase(field);
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
// A field given only in part keeps the stored values of the others.
Status PutLifecycle(const api::Json& body, api::Json* stored) {
  if (auto it = body.find("restart_policy"); it != body.end()) {
    orchestrator::RestartPolicy policy;
    if (auto now = stored->find("restart_policy"); now != stored->end())
      (void)api::DecodeRestartPolicy(*now, "", &policy);
    BERTH_RETURN_IF_ERROR(api::DecodeRestartPolicy(*it, "restart_policy", &policy));
    (*stored)["restart_policy"] = api::EncodeRestartPolicy(policy);
  }
  for (const char* key : {"update_config", "rollback_config"}) {
    orchestrator::UpdateConfig config;
    if (auto now = stored->find(key); now != stored->end())
      (void)api::DecodeUpdateConfig(*now, "", &config);
    if (auto it = body.find(key); it != body.end())
      BERTH_RETURN_IF_ERROR(api::DecodeUpdateConfig(*it, key, &config));
    (*stored)[key] = api::EncodeUpdateConfig(config);
  }
  if (auto it = body.find("rebalance"); it != body.end()) {
    BERTH_RETURN_IF_ERROR(api::CheckRebalanceSetting(*it, "rebalance"));
    if (*it == "on-join" && stored->value("mode", "replicated") == "global")
      return api::FieldError("rebalance",
                             "on-join is for replicated services: a global service runs one task "
                             "on every node");
    (*stored)["rebalance"] = *it;
  }
  return Status::Ok();
}

// A service's simulated run: `run`, or none (runs until stopped) for null.
void SetRun(api::Json& service, const api::Json& run) {
  if (run.is_null())
    service.erase("run");
  else
    service["run"] = run;
}

}  // namespace

Result<api::Json> ServiceRegistry::Create(const api::Json& service) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(service, "",
                                         {"id", "mode", "replicas", "task", "run", "restart_policy",
                                          "update_config", "rollback_config", "rebalance"}));
  api::Json stored = service;
  stored["spec_version"] = 1;
  // Read before the commit that creates it: every task of an earlier
  // service of this name has a lower serial (StoredService::incarnation).
  stored["incarnation"] = store_.revision();
  if (!stored.contains("restart_policy"))
    stored["restart_policy"] = api::EncodeRestartPolicy(orchestrator::RestartPolicy());
  for (const char* key : {"update_config", "rollback_config"}) stored.erase(key);
  stored["rebalance"] = "manual";
  BERTH_RETURN_IF_ERROR(PutLifecycle(service, &stored));
  if (service.contains("run")) {
    BERTH_RETURN_IF_ERROR(api::CheckObject(service["run"], "run", {"duration", "outcome"}));
    Result<api::Json> run = ReadSimulatedRun(service["run"], "run");
    if (!run.ok()) return run.status();
    stored["run"] = *run;
  }
  if (!stored.contains("task")) stored["task"] = api::Json::object();
  BERTH_RETURN_IF_ERROR(Validate(stored));
  BERTH_RETURN_IF_ERROR(api::RefuseIngressPorts(stored["task"], "task"));
  const std::string id = stored["id"];
  return services_.Create(id, stored, {ClaimWorkloadName(id, "service")});
}

// A view shows the rollout's status the control loop stores (kind
// "update"), as `docker service inspect` shows UpdateStatus.
Result<api::Json> ServiceRegistry::Get(std::string_view id) const {
  Result<api::Json> view = services_.Get(id);
  if (!view.ok()) return view;
  Result<std::optional<store::StoredObject>> status = store_.Get("update", id);
  if (status.ok() && status->has_value())
    (*view)["update_status"] = api::Json::parse((*status)->body, nullptr, false);
  return view;
}

Result<api::Json> ServiceRegistry::List() const {
  Result<api::Json> list = services_.List("services");
  Result<std::vector<store::StoredObject>> statuses = store_.List("update");
  if (!list.ok() || !statuses.ok()) return list;
  std::map<std::string, const store::StoredObject*> by_service;
  for (const store::StoredObject& o : *statuses) by_service[o.id] = &o;
  for (api::Json& service : (*list)["services"])
    if (auto it = by_service.find(service.value("id", "")); it != by_service.end())
      service["update_status"] = api::Json::parse(it->second->body, nullptr, false);
  return list;
}

Result<api::Json> ServiceRegistry::Update(std::string_view id, const api::Json& patch) {
  BERTH_RETURN_IF_ERROR(
      api::CheckObject(patch, "",
                       {"replicas", "task", "run", "restart_policy", "update_config",
                        "rollback_config", "rebalance", "force"}));
  if (auto force = patch.find("force"); force != patch.end() && !force->is_boolean())
    return api::TypeError(*force, "force", "true or false");
  Result<store::StoredObject> object = services_.Load(id);
  if (!object.ok()) return object.status();
  api::Json service = api::Json::parse(object->body);
  // Only a new template is held to the port rule: a service stored before
  // it (with ingress ports) can still be scaled.
  const bool new_task = patch.contains("task") && patch["task"] != service["task"];
  if (patch.contains("replicas")) service["replicas"] = patch["replicas"];
  BERTH_RETURN_IF_ERROR(PutLifecycle(patch, &service));
  api::Json run = service.value("run", api::Json());
  if (patch.contains("run")) {
    BERTH_RETURN_IF_ERROR(api::CheckObject(patch["run"], "run", {"duration", "outcome"}));
    Result<api::Json> read = ReadSimulatedRun(patch["run"], "run");
    if (!read.ok()) return read.status();
    run = *read;
  }
  const bool new_run = run != service.value("run", api::Json());
  if (new_task || new_run || patch.value("force", false)) {
    // The template (and simulated run) it had is what a rollback returns to.
    service["previous_task"] = service["task"];
    service["previous_run"] = service.value("run", api::Json());
    if (patch.contains("task")) service["task"] = patch["task"];
    SetRun(service, run);
    service["spec_version"] = service["spec_version"].get<uint64_t>() + 1;
    service.erase("template_version");
    service.erase("template_earlier");
    service["update_kind"] = "update";
  }
  BERTH_RETURN_IF_ERROR(Validate(service));
  if (new_task) BERTH_RETURN_IF_ERROR(api::RefuseIngressPorts(service["task"], "task"));
  return services_.Replace(*object, service);
}

Result<api::Json> ServiceRegistry::Rollback(std::string_view id) {
  Result<store::StoredObject> object = services_.Load(id);
  if (!object.ok()) return object.status();
  Result<api::Json> service = RolledBack(api::Json::parse(object->body));
  if (!service.ok()) return service.status();
  return services_.Replace(*object, *service);
}

Result<api::Json> ServiceRegistry::RolledBack(api::Json service) {
  if (!service.contains("previous_task"))
    return Status::Conflict("service '" + service.value("id", "") +
                            "' has no previous spec to roll back to");
  std::swap(service["task"], service["previous_task"]);
  const api::Json run = service.value("previous_run", api::Json());
  service["previous_run"] = service.value("run", api::Json());
  SetRun(service, run);
  const uint64_t version = service["spec_version"].get<uint64_t>() + 1;
  // The tasks of versions that ran the template it returns to keep running.
  api::PutTemplateVersions(
      orchestrator::RolledBackVersions(api::TemplateVersionsOf(service), version), &service);
  service["spec_version"] = version;
  service["update_kind"] = "rollback";
  return service;
}

Result<api::Json> ServiceRegistry::Rebalance(std::string_view id) {
  Result<store::StoredObject> object = services_.Load(id);
  if (!object.ok()) return object.status();
  api::Json service = api::Json::parse(object->body);
  if (!service.contains("replicas"))
    return Status::Conflict("service '" + service.value("id", "") +
                            "' is global: it runs one task on every node, so it has nothing to "
                            "rebalance");
  Result<std::optional<store::StoredObject>> status = store_.Get("update", id);
  if (!status.ok()) return status.status();
  const api::Json last =
      status->has_value() ? api::Json::parse((*status)->body, nullptr, false) : api::Json();
  std::string state, message;
  LastRollout rollout;
  if (last.is_object()) {
    state = last.value("state", "");
    message = last.value("message", "");
    rollout = {last.value("spec_version", uint64_t{0}), state, message,
               last.value("in_flight", uint64_t{0})};
  }
  if (std::string why =
          WhyRebalanceWaits(service.value("id", ""), service.value("spec_version", uint64_t{0}),
                            service.value("update_kind", "") == "rebalance", rollout);
      !why.empty())
    return Status::Conflict(why);
  return services_.Replace(*object, Rebalanced(std::move(service)));
}

std::string ServiceRegistry::WhyRebalanceWaits(std::string_view id, uint64_t spec_version,
                                               bool rebalancing, const LastRollout& last) {
  const std::string service = "service '" + std::string(id) + "'";
  if (last.spec_version != spec_version)
    return spec_version > 1
               ? service + ": the rollout of spec version " + std::to_string(spec_version) +
                     " has not started yet; rebalance it once that completes"
               : "";
  const std::string why = " (" + std::string(last.state) + ": " + std::string(last.message) + ")";
  if (last.state == "updating" || last.state == "rollback_started")
    return service + " has a rollout in progress" + why + "; rebalance it once that completes";
  if (last.state == "rollback_paused" || (last.state == "paused" && !rebalancing))
    return service + " has a paused rollout" + why + "; update or roll it back first";
  if (last.state == "paused" && last.in_flight > 0)
    return service + " has a paused rollout" + why +
           "; rebalance it again once its replacements in flight have landed";
  return "";
}

api::Json ServiceRegistry::Rebalanced(api::Json service) {
  service["template_version"] = api::TemplateVersionOf(service);
  service["spec_version"] = service["spec_version"].get<uint64_t>() + 1;
  service["update_kind"] = "rebalance";
  return service;
}

Status ServiceRegistry::Remove(std::string_view id) {
  return services_.Remove(id, {ReleaseWorkloadName(std::string(id))});
}

}  // namespace berth::daemon
