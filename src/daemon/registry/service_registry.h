// ServiceRegistry: the service operations of the berthd API on the store:
// create, get, list, update (scale, or a new task template), remove.
//
// A service is stored (kind "service") as the service object of a placement
// document (docs/plan.md): id, spec_version, mode, replicas, task. It is
// validated by the same decoder `berth plan` uses, so fields and error texts
// are the same, and then held to berthd's own rule that every port of a new
// template is in host mode (api::RefuseIngressPorts: Berth has no routing
// mesh). Creating sets spec_version 1; an update that changes the
// task template increments it (the control loop then replaces the tasks of
// older versions); changing only `replicas` keeps it. The control loop, not
// this class, creates and stops tasks.
//
// Thread-safe (the store is).
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "api/json_fields.h"
#include "core/status.h"
#include "daemon/registry/stored_kind.h"

namespace berth::daemon {

class ServiceRegistry {
 public:
  // The fields berthd keeps in a stored service beside the placement
  // document's (docs/api.md, "service").
  static constexpr std::array<const char*, 11> kBerthdFields = {"run",
                                                                "restart_policy",
                                                                "incarnation",
                                                                "update_config",
                                                                "rollback_config",
                                                                "previous_task",
                                                                "previous_run",
                                                                "update_kind",
                                                                "rebalance",
                                                                "template_version",
                                                                "template_earlier"};

  explicit ServiceRegistry(store::Store& store) : store_(store), services_(store, "service") {}

  // Body: id, mode (replicated | global), replicas (replicated only), task,
  // restart_policy, update_config and rollback_config
  // (api/lifecycle_codec.h; absent: Docker's defaults), rebalance ("manual"
  // | "on-join"; absent: manual), and
  // run: {"duration": seconds, "outcome": "complete" | "fail"}, how the
  // simulated executor runs each task (absent: until stopped). berthd adds
  // spec_version and incarnation (the store's revision at creation, which
  // tells its tasks from those of an earlier service of the same name).
  Result<api::Json> Create(const api::Json& service);
  Result<api::Json> Get(std::string_view id) const;
  Result<api::Json> List() const;  // {"services": [...]} by id
  // Body: replicas, task, restart_policy, update_config, rollback_config,
  // rebalance (new policies apply from then on; they make no new spec
  // version) and/or
  // force: true (a new spec version though the template is unchanged, as
  // `docker service update --force`). A new spec version keeps the template
  // it replaces as previous_task; the control loop rolls it out as
  // update_config says.
  Result<api::Json> Update(std::string_view id, const api::Json& patch);
  // `docker service rollback`: the previous template becomes the task
  // template again (a new spec version, rolled out with rollback_config).
  // Conflict when the service never had another template.
  Result<api::Json> Rollback(std::string_view id);
  // `service` with its previous template swapped in (the control loop's
  // automatic rollback uses it too).
  static Result<api::Json> RolledBack(api::Json service);
  // `berth service rebalance` (docs/placement.md, "Rebalancing"): a new
  // spec version with the same template (update_kind "rebalance"), which the
  // control loop rolls out by moving only the tasks on nodes that hold more
  // than the engine would put there now. Conflict for a global service, and
  // while the service's last rollout is under way or paused.
  Result<api::Json> Rebalance(std::string_view id);
  // A service's last rollout, as a rebalance asks about it: its stored
  // status (docs/api.md, "update_status"), or the control loop's own.
  // spec_version 0: none.
  struct LastRollout {
    uint64_t spec_version = 0;
    std::string_view state, message;
    uint64_t in_flight = 0;
  };
  // Why a rebalance of service `id`, at `spec_version` (`rebalancing`: that
  // version came from a rebalance), may not start after `last`: its rollout
  // has not started yet, is under way, or is paused (unless a rebalance's
  // with no replacement in flight, which may be rebalanced again). "" if
  // it may. Shared by Rebalance and the control loop's on-join rebalance.
  static std::string WhyRebalanceWaits(std::string_view id, uint64_t spec_version, bool rebalancing,
                                       const LastRollout& last);
  // `service` as a rebalance makes it (the control loop's rebalance when a
  // node joins uses it too): spec_version + 1, template_version kept.
  static api::Json Rebalanced(api::Json service);
  Status Remove(std::string_view id);

 private:
  store::Store& store_;
  StoredKind services_;
};

}  // namespace berth::daemon
