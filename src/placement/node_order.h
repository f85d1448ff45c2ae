// The node order for one group of identical tasks (spec/placement.md, "Node
// order for one service"), as a sortable key: smaller is better.
//
// Rule 1 (faulty nodes) becomes part of the key because "if either node has at
// least max_failures failures, fewer wins" is the same as comparing
// (failures >= max ? failures : 0) first: nodes below the threshold tie on it.
#pragma once

#include <cstdint>

namespace berth::placement {

struct NodeKey {
  uint64_t primary = 0;    // (faulty failures << 32) | active tasks of the service
  uint64_t secondary = 0;  // (active tasks in total << 32) | tie-break rank

  static NodeKey Make(uint32_t faulty_failures, uint32_t service_tasks, uint32_t total_tasks,
                      uint32_t rank) {
    return {(uint64_t{faulty_failures} << 32) | service_tasks,
            (uint64_t{total_tasks} << 32) | rank};
  }
  // The key after one more active task of the service lands on the node.
  NodeKey WithOneMoreTask() const { return {primary + 1, secondary + (uint64_t{1} << 32)}; }

  friend bool operator<(const NodeKey& a, const NodeKey& b) {
    return a.primary != b.primary ? a.primary < b.primary : a.secondary < b.secondary;
  }
};

}  // namespace berth::placement
