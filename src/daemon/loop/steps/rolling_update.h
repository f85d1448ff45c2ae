// RollingUpdate: rolling updates and rollbacks, SwarmKit's updater in a
// pass's terms. A service whose spec version moved replaces its placed
// tasks of older versions batch by batch, as its update_config (or, for a
// rollback, rollback_config) says (orchestrator/update_config.h).
//
// A placed task of an older version is `outdated` (Outdated, from
// TaskRuns); a batch takes up to `parallelism` of them, lowest slot first,
// each replaced in its own slot (or on its node, for a global service):
// stop-first stops it and makes the new task; start-first makes the new
// task and stops the old one once the new one runs. A replacement is in
// flight until it has run for `monitor`; one that ends first is a failure.
// The next batch starts `delay` after the last replacement finished. Too
// many failures take the failure action: pause, continue, or roll back (the
// loop writes the service's previous template back as a new spec version,
// as `service rollback` does). A rebalance (steps/rebalance.h) rolls out
// through the same machinery, always start-first.
//
// The rollouts live in Rollouts (rollouts.h) across passes; each one's
// status is stored as kind "update" when it changes (docs/api.md,
// "update_status").
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "daemon/loop/pass.h"

namespace berth::daemon {

// What a service's rollout is called in its status messages: update,
// rollback or rebalance.
const char* RolloutKind(const StoredService& service);

class RollingUpdate {
 public:
  RollingUpdate(Pass& pass, Rollouts& rollouts) : pass_(pass), rollouts_(rollouts) {}
  // A visited task of an older template: one not placed yet is simply
  // replaced; a placed one waits for its service's rollout.
  void Outdated(TaskEntry& e, const std::string& service_id, const StoredService& service);
  // A task of the version a rollout brings, seen by a pass that visits
  // every task (berthd started, or the layout moved): one that has not run
  // for the monitor period yet counts as in flight, so a restarted berthd
  // does not replace more than `parallelism` at once.
  void Young(TaskEntry& e, const std::string& service_id, const StoredService& service);
  // Every new spec version of a dirty service gets a rollout, with nothing
  // to replace as well, so that its status says it is done (a rebalance
  // waits for it). Before Advance.
  void Open();
  // Over every rollout that has something to do (one under way, or with
  // replacements in flight): those in flight, its failures, its next batch,
  // and its status. A completed or paused one costs a pass nothing. The
  // rollouts of removed services go, with their statuses.
  void Advance();
  // The rollout of `service`'s spec version, started now if it has none.
  ServiceUpdate& RolloutOf(const std::string& service_id, const StoredService& service);
  // Stores the rollout's status if it changed.
  void QueueStatus(const std::string& service_id, ServiceUpdate& u);

 private:
  void RollOut(const std::string& service_id, const StoredService& service, ServiceUpdate& u);
  bool Landed(const std::pair<uint32_t, uint32_t>& flight, const orchestrator::UpdateConfig& config,
              bool moving, ServiceUpdate& u, std::string* failed_task);
  void FailureAction(const std::string& service_id, const StoredService& service,
                     const orchestrator::UpdateConfig& config, ServiceUpdate& u,
                     const std::string& failed_task);
  void StartBatch(const std::string& service_id, const StoredService& service,
                  const orchestrator::UpdateConfig& config, ServiceUpdate& u);
  // The runnable task of the current version that holds `slot`, if any.
  std::optional<uint32_t> CurrentHolder(const std::string& service_id, const StoredService& service,
                                        uint64_t slot);

  Pass& pass_;
  Rollouts& rollouts_;
};

}  // namespace berth::daemon
