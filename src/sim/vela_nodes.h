// Simulated nodes of the four types of Vela's experiments (seed 003): per
// ten nodes, 3 small cloud (2 CPU, 4 GiB), 3 medium (8 CPU, 32 GiB), 1 large
// (32 CPU, 128 GiB) and 3 constrained edge nodes (1 CPU, 2 GiB, with
// geo-location within ~5 km of (52.5, 13.4), battery level 20..99% and
// capacity 4000 mAh). Used by berth-agent --simulate and the benchmarks.
// Pure function.
#pragma once

#include <string>
#include <vector>

#include "core/node.h"

namespace berth::sim {

// Nodes "<prefix>-n0" .. "<prefix>-n<count-1>".
std::vector<Node> MakeVelaNodes(const std::string& prefix, int count);

}  // namespace berth::sim
