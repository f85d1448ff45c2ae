// The nodes scale_bench and views_bench write straight into a store: ids
// "node-<i>", labels az (10 values) and rack (10 per az), 64 CPUs and
// 256 GiB each.
#pragma once

#include <string>
#include <vector>

#include "api/json_fields.h"
#include "store/store.h"

namespace berth::bench {

inline std::vector<store::Write> NodeWrites(int nodes) {
  std::vector<store::Write> writes;
  for (int i = 0; i < nodes; ++i) {
    const std::string id = "node-" + std::to_string(i);
    const api::Json node = {
        {"id", id},
        {"labels",
         {{"az", "az" + std::to_string(i % 10)}, {"rack", "r" + std::to_string(i % 100)}}},
        {"resources", {{"cpu", 64}, {"memory", "256Gi"}}}};
    writes.push_back(store::Write::Create("node", id, node.dump()));
  }
  return writes;
}

}  // namespace berth::bench
