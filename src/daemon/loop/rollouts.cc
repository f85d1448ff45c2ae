#include "daemon/loop/rollouts.h"

namespace berth::daemon {

uint64_t ServiceUpdate::StartFirstPairs(std::span<const TaskEntry> tasks) const {
  uint64_t pairs = 0;
  for (const auto& [next, old] : in_flight)
    pairs += old != kNone && tasks[old].live() && tasks[old].runnable();
  return pairs;
}

const TaskEntry* ServiceUpdate::RunningPartner(uint32_t p, std::span<const TaskEntry> tasks) const {
  for (const auto& [next, old] : in_flight) {
    const uint32_t partner = next == p ? old : old == p ? next : kNone;
    if (partner != kNone && tasks[partner].live() && tasks[partner].runnable())
      return &tasks[partner];
  }
  return nullptr;
}

void ServiceUpdate::PairInFlight(std::set<uint32_t>& olds, std::span<const TaskEntry> tasks) {
  std::map<uint64_t, uint32_t> old_by_slot;
  for (auto& [next, old] : in_flight) {
    if (old != kNone || tasks[next].task.slot == 0) continue;
    if (old_by_slot.empty())
      for (uint32_t p : olds) old_by_slot.emplace(tasks[p].task.slot, p);
    const auto it = old_by_slot.find(tasks[next].task.slot);
    if (it == old_by_slot.end()) continue;
    old = it->second;
    olds.erase(it->second);
    old_by_slot.erase(it);
  }
}

std::string ServiceUpdate::TakeRoom() {
  for (auto it = room.begin(); it != room.end(); it = room.erase(it))
    if (it->second > 0) {
      --it->second;
      return it->first;
    }
  return "";
}

void Rollouts::ForgetPositions() {
  for (auto& [id, update] : by_service_) {
    update.outdated.clear();
    update.in_flight.clear();
    update.candidates.clear();
    update.movers_chosen = false;
  }
}

// A rollout's stored status: a restarted berthd goes on from it (a paused
// update stays paused). Its own writes come back here too (the same text).
void Rollouts::Apply(const std::string& id, const std::optional<api::Json>& json,
                     const std::string& text) {
  if (!json) {
    by_service_.erase(id);
    return;
  }
  ServiceUpdate& u = by_service_[id];
  if (u.stored == text) return;
  u.stored = text;
  u.spec_version = json->value("spec_version", uint64_t{0});
  u.state = json->value("state", "");
  u.message = json->value("message", "");
  u.replaced = json->value("replaced", uint64_t{0});
  u.failures = json->value("failures", uint64_t{0});
  if (Result<Timestamp> at = ParseRfc3339(json->value("started_at", "")); at.ok())
    u.started_at = *at;
  if (Result<Timestamp> at = ParseRfc3339(json->value("completed_at", "")); at.ok())
    u.completed_at = *at;
}

}  // namespace berth::daemon
