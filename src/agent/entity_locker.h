// EntityLocker: per-key mutual exclusion for the agent's binding pipelines
// (docs/threephase.md, "Commit"): a map of per-key locks created on demand,
// with waiter counts; waiters are served in arrival order; an entry is
// removed when nobody holds or waits for it.
//
// Each key has a ticket counter: Lock takes the next ticket and waits until
// it is served, so waiters are served strictly in arrival order. Memory is
// proportional to the keys being locked or waited for, not to cluster size.
// Thread-safe; Lock and Unlock may be called from any thread (Unlock by the
// thread that holds the key).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace berth::agent {

class EntityLocker {
 public:
  void Lock(uint64_t key);
  void Unlock(uint64_t key);
  // Keys with a holder or waiters; 0 when idle.
  size_t size() const;
  // Holder plus waiters of one key (0 when unused).
  uint32_t Users(uint64_t key) const;

 private:
  struct Entry {
    uint64_t next_ticket = 0;  // the ticket the next Lock takes
    uint64_t serving = 0;      // the ticket that holds the key
    uint32_t users = 0;        // holder + waiters
    std::condition_variable turn;
  };
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Entry>> entries_;
};

// Holds a key of an EntityLocker for a scope.
class EntityLock {
 public:
  EntityLock(EntityLocker& locker, uint64_t key) : locker_(locker), key_(key) { locker_.Lock(key_); }
  ~EntityLock() { locker_.Unlock(key_); }
  EntityLock(const EntityLock&) = delete;
  EntityLock& operator=(const EntityLock&) = delete;

 private:
  EntityLocker& locker_;
  uint64_t key_;
};

}  // namespace berth::agent
