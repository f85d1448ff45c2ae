// Rollouts: the rollouts of services' spec versions (rolling updates,
// rollbacks and rebalances) that the control loop drives
// (steps/rolling_update.h, steps/rebalance.h), by service id, and the
// services an on-join rebalance still has to look at. StoredState keeps them
// between passes and reads a rollout's stored status back (Apply) when
// berthd starts, so a paused update stays paused.
//
// Not thread-safe: the control loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "api/json_fields.h"
#include "core/time.h"
#include "daemon/loop/task_entry.h"

namespace berth::daemon {

// A service's rollout of a spec version (a rolling update or a rollback),
// as steps/rolling_update.h drives it; its status is stored as kind "update" (id: the
// service) and shown with the service (docs/api.md, "update_status").
struct ServiceUpdate {
  uint64_t spec_version = 0;  // the version it rolls out
  // updating | paused | completed | rollback_started | rollback_paused |
  // rollback_completed (Docker's UpdateStatus states).
  std::string state;
  std::string message;
  std::optional<Timestamp> started_at, completed_at;
  // Placed tasks of older versions not replaced yet (positions; checked
  // before use), and the replacements in flight with the task each
  // replaces (kNone: already stopped, stop-first).
  static constexpr uint32_t kNone = UINT32_MAX;
  std::set<uint32_t> outdated;
  std::vector<std::pair<uint32_t, uint32_t>> in_flight;
  // A rebalance's tasks of older versions on nodes, until its movers are
  // chosen (steps/rebalance.h): those go to `outdated`, the others stay.
  // `room`: by node id, the replacements the target still sends there.
  std::set<uint32_t> candidates;
  std::map<std::string, uint32_t> room;
  bool movers_chosen = false;
  uint64_t replaced = 0, failures = 0;
  Timestamp next_batch_at;
  std::string stored;  // the status as last read or written
  bool active() const { return state == "updating" || state == "rollback_started"; }
  bool paused() const { return state == "paused" || state == "rollback_paused"; }
  // Replacements in flight whose old task still runs beside them.
  uint64_t StartFirstPairs(std::span<const TaskEntry> tasks) const;
  // The other task of a start-first pair in flight that the task at
  // `position` belongs to, if it is still meant to run.
  const TaskEntry* RunningPartner(uint32_t position, std::span<const TaskEntry> tasks) const;
  // A replacement found in flight by a full visit whose slot still holds an
  // older task of `olds` (outdated, or a rebalance's candidates: berthd
  // restarted during a start-first rollout, or the positions moved): that
  // task is the one it replaces, so it is not replaced twice.
  void PairInFlight(std::set<uint32_t>& olds, std::span<const TaskEntry> tasks);
  // A node a rebalance's target still has room on (one place taken), in
  // node id order; "" when none: the engine chooses.
  std::string TakeRoom();
};

class Rollouts {
 public:
  using Map = std::map<std::string, ServiceUpdate>;
  ServiceUpdate* Find(const std::string& service) {
    const auto it = by_service_.find(service);
    return it == by_service_.end() ? nullptr : &it->second;
  }
  const ServiceUpdate* Find(const std::string& service) const {
    return const_cast<Rollouts*>(this)->Find(service);
  }
  // The rollout of `service`, made empty if it has none.
  ServiceUpdate& Of(const std::string& service) { return by_service_[service]; }
  Map::iterator begin() { return by_service_.begin(); }
  Map::iterator end() { return by_service_.end(); }
  Map::iterator erase(Map::iterator it) { return by_service_.erase(it); }
  // Positions may have moved (a pass that visits every task): the lists of
  // positions are rebuilt by that visit.
  void ForgetPositions();
  // `service`'s stored status (kind "update"; nullopt: deleted) as `text`.
  // Its own writes come back here too, unchanged.
  void Apply(const std::string& service, const std::optional<api::Json>& json,
             const std::string& text);
  // Services with "rebalance": "on-join" to look at since a node joined
  // (steps/rebalance.h keeps those whose rollout is under way).
  std::set<std::string>& rebalance_due() { return rebalance_due_; }

 private:
  Map by_service_;
  std::set<std::string> rebalance_due_;
};

}  // namespace berth::daemon
