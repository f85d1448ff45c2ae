#include "orchestrator/service_tally.h"

#include <algorithm>
#include <bit>

namespace berth::orchestrator {

void NumberSet::Set(uint64_t n, bool on) {
  if (n >= kLimit) return;
  if (!on && n / 64 >= words_.size()) return;
  if (n / 64 >= words_.size()) words_.resize(std::max<size_t>(n / 64 + 1, words_.size() * 2));
  const uint64_t bit = uint64_t{1} << (n % 64);
  words_[n / 64] = on ? (words_[n / 64] | bit) : (words_[n / 64] & ~bit);
}

uint64_t NumberSet::NextClear(uint64_t from) const {
  for (uint64_t w = from / 64; w < words_.size(); ++w) {
    uint64_t free = ~words_[w];
    if (w == from / 64) free &= ~uint64_t{0} << (from % 64);
    if (free != 0) return w * 64 + static_cast<uint64_t>(std::countr_zero(free));
  }
  return std::max<uint64_t>(from, words_.size() * 64);
}

std::optional<uint64_t> NumberSet::PrevSet(uint64_t before, const NumberSet* without) const {
  if (before == 0) return std::nullopt;
  const uint64_t last = before - 1;
  for (uint64_t w = std::min<uint64_t>(last / 64 + 1, words_.size()); w-- > 0;) {
    uint64_t bits = words_[w];
    if (without != nullptr && w < without->words_.size()) bits &= ~without->words_[w];
    if (w == last / 64 && last % 64 != 63) bits &= (uint64_t{1} << (last % 64 + 1)) - 1;
    if (bits != 0) return w * 64 + 63 - static_cast<uint64_t>(std::countl_zero(bits));
  }
  return std::nullopt;
}

uint8_t ServiceTally::FlagsOf(TaskState state, TaskState desired, bool has_node) const {
  if (KeptBySlot(state, desired))
    return Mark::kTaken | Mark::kRunnable | (global && has_node ? Mark::kCovered : 0);
  if (!Runnable(state, desired)) return Mark::kTaken;
  uint8_t flags = Mark::kTaken | Mark::kRunnable;
  if (state == TaskState::kPending) flags |= Mark::kPending;
  if (global && has_node) flags |= Mark::kCovered;
  return flags;
}

namespace {

// Counts a task in (on) or out of (!on) `tally`: Add and Remove.
void Count(ServiceTally& tally, const ServiceTally::Mark& mark, const std::string& node, bool on) {
  using Mark = ServiceTally::Mark;
  if (mark.number >= 0) {
    const auto n = static_cast<uint64_t>(mark.number);
    if (mark.flags & Mark::kTaken) tally.taken.Set(n, on);
    // Two runnable tasks share a slot while a start-first update replaces
    // one: the slot stays held while its holder (the newer) counts.
    const bool shared = !on && n < tally.holder.size() &&
                        tally.holder[n] != ServiceTally::kNoHolder &&
                        tally.holder[n] != mark.handle;
    if ((mark.flags & Mark::kRunnable) && !shared) tally.runnable.Set(n, on);
    if (mark.flags & Mark::kPending) tally.pending.Set(n, on);
    if ((mark.flags & Mark::kRunnable) && n < NumberSet::kLimit) {
      if (on && tally.holder.size() <= n)
        tally.holder.resize(std::max<size_t>(n + 1, tally.holder.size() * 2),
                            ServiceTally::kNoHolder);
      if (on)
        tally.holder[n] = mark.handle;
      else if (n < tally.holder.size() && tally.holder[n] == mark.handle)
        tally.holder[n] = ServiceTally::kNoHolder;
    }
  }
  if (mark.flags & Mark::kRunnable) {
    const uint64_t step = on ? 1 : static_cast<uint64_t>(-1);
    tally.runnable_count += step;
    if (mark.number < 0) tally.unnumbered += step;
  }
  if (!(mark.flags & Mark::kCovered)) return;
  if (on) {
    ++tally.covered[node];
  } else if (auto it = tally.covered.find(node); it != tally.covered.end() && --it->second == 0) {
    tally.covered.erase(it);
  }
}

}  // namespace

void ServiceTally::Add(const Mark& mark, const std::string& node) {
  Count(*this, mark, node, true);
}

void ServiceTally::Remove(const Mark& mark, const std::string& node) {
  Count(*this, mark, node, false);
}

std::optional<uint64_t> NumberIn(std::string_view service, std::string_view task_id) {
  if (task_id.size() <= service.size() + 1 || !task_id.starts_with(service) ||
      task_id[service.size()] != '.')
    return std::nullopt;
  const int64_t n = ReplicaNumber(task_id);
  // ReplicaNumber reads after the last dot: it must be the service's.
  if (n < 0 || task_id.rfind('.') != service.size() ||
      static_cast<uint64_t>(n) >= NumberSet::kLimit)
    return std::nullopt;
  return static_cast<uint64_t>(n);
}

std::optional<std::vector<uint64_t>> ChooseScaleDown(const ServiceTally& tally, uint64_t keep) {
  if (tally.unnumbered != 0) return std::nullopt;
  std::vector<uint64_t> stop;
  if (tally.runnable_count <= keep) return stop;
  const uint64_t count = tally.runnable_count - keep;
  stop.reserve(count);
  // Pending ones from the highest number down, then the placed ones.
  std::optional<uint64_t> n = tally.pending.PrevSet(NumberSet::kLimit);
  for (; n && stop.size() < count; n = tally.pending.PrevSet(*n)) stop.push_back(*n);
  n = tally.runnable.PrevSet(NumberSet::kLimit, &tally.pending);
  for (; n && stop.size() < count; n = tally.runnable.PrevSet(*n, &tally.pending))
    stop.push_back(*n);
  return stop;
}

std::vector<uint64_t> NewSlots(const ServiceTally& tally, uint64_t replicas) {
  std::vector<uint64_t> slots;
  if (tally.runnable_count >= replicas) return slots;
  slots.reserve(replicas - tally.runnable_count);
  for (uint64_t n = tally.runnable.NextClear(1); tally.runnable_count + slots.size() < replicas;
       n = tally.runnable.NextClear(n + 1))
    slots.push_back(n);
  return slots;
}

std::vector<std::string> NewReplicaIds(std::string_view service, const ServiceTally& tally,
                                       uint64_t replicas, const Taken& taken_id) {
  std::vector<std::string> ids;
  if (tally.runnable_count >= replicas) return ids;
  ids.reserve(replicas - tally.runnable_count);
  const std::string prefix = std::string(service) + ".";
  for (uint64_t n = tally.taken.NextClear(1); tally.runnable_count + ids.size() < replicas;
       n = tally.taken.NextClear(n + 1)) {
    std::string id = prefix + std::to_string(n);
    if (!taken_id(id)) ids.push_back(std::move(id));
  }
  return ids;
}

}  // namespace berth::orchestrator
