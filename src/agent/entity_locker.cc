#include "agent/entity_locker.h"

namespace berth::agent {

void EntityLocker::Lock(uint64_t key) {
  std::unique_lock lock(mu_);
  std::unique_ptr<Entry>& slot = entries_[key];
  if (!slot) slot = std::make_unique<Entry>();
  Entry& entry = *slot;  // stable: entries are heap-allocated
  const uint64_t ticket = entry.next_ticket++;
  ++entry.users;
  entry.turn.wait(lock, [&] { return entry.serving == ticket; });
}

void EntityLocker::Unlock(uint64_t key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;  // not locked: a caller bug, but never a crash
  Entry& entry = *it->second;
  ++entry.serving;
  if (--entry.users == 0) {
    entries_.erase(it);
    return;
  }
  entry.turn.notify_all();
}

size_t EntityLocker::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

uint32_t EntityLocker::Users(uint64_t key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second->users;
}

}  // namespace berth::agent
