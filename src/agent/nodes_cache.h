// NodesCache: an agent's view of its cluster's nodes (docs/threephase.md,
// "Parts"): each node's capacity, what is bound to it, and what is reserved
// but not yet committed.
//
// Nodes live in a contiguous array indexed by dense integers; each node has
// its own lock (agent/spin_lock.h), so readers and reservations on different
// nodes never contend. A reservation takes the task's demand at once, even when that
// drives a free amount negative; Rollback gives back exactly what Reserve
// took; Bind turns a reservation into a binding and Unbind gives a binding
// back when its task stops. Free amounts are
// capacity - bound - reserved, so a conflict check on a locked node sees
// every other in-flight reservation too.
//
// Nodes are added (a berth-node machine joins the agent) up to a capacity
// fixed at construction, so the arrays never move under a reader; a node
// is never removed: one that left stays, down, and samples skip it.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/protocol.h"
#include "agent/spin_lock.h"
#include "core/id_index.h"
#include "core/node_info.h"
#include "core/status.h"
#include "core/time.h"

namespace berth::agent {

// One node and what the agent's plugins read about it.
struct AgentNode {
  NodeInfo info;
  std::optional<GeoPoint> geo;             // label geo-location = "lat,long"
  std::optional<int64_t> battery_percent;  // label battery-level; absent: mains powered
  int64_t battery_capacity_mah = 0;        // label battery-capacity
  Timestamp last_bound;                    // when it last received a task (LRU)
  int64_t bound_milli_cpu = 0;             // committed demand, for the
  int64_t bound_memory_bytes = 0;          // over-commit invariant
  uint32_t bound_tasks = 0;
  // Carries a property few tasks can do without (today: the edge labels
  // geo-location or battery-level, which EdgeRequirements select on). The
  // scarcity penalty keeps such nodes for the tasks that need them.
  bool scarce = false;
};

// Demand taken on one node; give it to Rollback or Bind exactly once, and
// a bound one to Unbind at most once.
struct Reservation {
  uint32_t node = 0;
  std::shared_ptr<const TaskSpec> spec;
  std::vector<GenericClaim> claims;
};

class NodesCache {
 public:
  // `capacity`: the most nodes Upsert may bring (at least nodes.size()).
  explicit NodesCache(std::vector<Node> nodes, uint32_t capacity = 0);

  uint32_t size() const { return size_.load(std::memory_order_acquire); }
  uint32_t capacity() const { return static_cast<uint32_t>(nodes_.size()); }
  const std::string& NodeId(uint32_t node) const { return ids_[node]; }
  // The index of the node with `id` (the first one, if ids repeat).
  std::optional<uint32_t> Find(std::string_view id) const;
  // Adds `node`, or updates the node of its id (NodeInfo::UpdateNode: what
  // its tasks hold is kept). Returns its index; Conflict when the cache is
  // full.
  Result<uint32_t> Upsert(Node node);

  // Calls fn(const AgentNode&) with the node locked and returns its result.
  template <typename Fn>
  auto Read(uint32_t node, Fn&& fn) const {
    std::lock_guard lock(locks_[node]);
    return fn(std::as_const(nodes_[node]));
  }

  Reservation Reserve(uint32_t node, std::shared_ptr<const TaskSpec> spec);
  void Rollback(Reservation& reservation);
  void Bind(Reservation& reservation, Timestamp at);
  void Unbind(Reservation& binding);

  // Whether bound demand exceeds the node's capacity: must never be true.
  bool Overcommitted(uint32_t node) const;

 private:
  // Sized to the capacity; entries below size_ are nodes.
  std::vector<AgentNode> nodes_;
  std::vector<std::string> ids_;  // written once, before the node is counted
  std::atomic<uint32_t> size_{0};
  mutable std::shared_mutex index_mu_;  // Upsert writes, Find reads
  IdIndex index_;                       // by node id
  mutable std::unique_ptr<SpinLock[]> locks_;
};

// Parses "lat,long" in decimal degrees ("52.52,13.405"); nullopt when malformed.
std::optional<GeoPoint> ParseGeoLocation(std::string_view text);

}  // namespace berth::agent
