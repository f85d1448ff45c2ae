// The node order for one group of identical tasks (docs/placement.md, "The
// node order" and "Preferences beyond SwarmKit"),
// as a sortable key: smaller is better.
//
// Rule 1 (faulty nodes) becomes part of the key because "if either node has at
// least max_failures failures, fewer wins" is the same as comparing
// (failures >= max ? failures : 0) first: nodes below the threshold tie on it.
// Soft constraints come next: fewer unmet ones wins, so a node meeting them
// all sorts before any node that does not, whatever its load.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/node_info.h"

namespace berth::placement {

struct NodeKey {
  // (faulty failures << 40) | (unmet soft constraints << 32) | low word, the
  // low word being the service's active tasks (spread) or the room left
  // (binpack).
  uint64_t primary = 0;
  // Spread: (active tasks in total << 32) | tie-break rank.
  // Binpack: (~active tasks of the service << 32) | tie-break rank.
  uint64_t secondary = 0;

  // SwarmKit's order: fewest tasks of the service, then fewest in total.
  static NodeKey Make(uint32_t faulty_failures, uint32_t soft_misses, uint32_t service_tasks,
                      uint32_t total_tasks, uint32_t rank) {
    return {High(faulty_failures, soft_misses) | service_tasks,
            (uint64_t{total_tasks} << 32) | rank};
  }
  // Binpack: least room left first (RoomLeft), then most tasks of the service.
  static NodeKey Binpack(uint32_t faulty_failures, uint32_t soft_misses, uint32_t room_left,
                         uint32_t service_tasks, uint32_t rank) {
    return {High(faulty_failures, soft_misses) | room_left,
            (uint64_t{~service_tasks} << 32) | rank};
  }
  // A spread key after one more active task of the service lands on the node.
  NodeKey WithOneMoreTask() const { return {primary + 1, secondary + (uint64_t{1} << 32)}; }

  friend bool operator<(const NodeKey& a, const NodeKey& b) {
    return a.primary != b.primary ? a.primary < b.primary : a.secondary < b.secondary;
  }

 private:
  static uint64_t High(uint32_t faulty_failures, uint32_t soft_misses) {
    return (uint64_t{std::min<uint32_t>(faulty_failures, 0xFFFFFF)} << 40) |
           (uint64_t{std::min<uint32_t>(soft_misses, 0xFF)} << 32);
  }
};

// The room a node has left, for binpack: the free share of its CPU plus the
// free share of its memory, each in 0..2^30 (a resource the node does not
// have, or has overspent, counts 0). Generic resources do not count.
inline uint32_t RoomLeft(const NodeInfo& info) {
  auto share = [](int64_t free, int64_t total) -> uint64_t {
    if (total <= 0 || free <= 0) return 0;
    return (static_cast<unsigned __int128>(std::min(free, total)) << 30) / total;
  };
  const NodeResources& total = info.node().resources;
  return static_cast<uint32_t>(share(info.available_milli_cpu(), total.milli_cpu) +
                               share(info.available_memory_bytes(), total.memory_bytes));
}

}  // namespace berth::placement
