#include "sim/vela_nodes.h"

namespace berth::sim {

std::vector<Node> MakeVelaNodes(const std::string& prefix, int count) {
  std::vector<Node> nodes(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Node& n = nodes[static_cast<size_t>(i)];
    n.id = prefix + "-n" + std::to_string(i);
    const int kind = i % 10;  // 0-2 small, 3-5 medium, 6 large, 7-9 edge
    if (kind <= 2) {
      n.resources = {2'000, 4LL << 30, {}};
    } else if (kind <= 5) {
      n.resources = {8'000, 32LL << 30, {}};
    } else if (kind == 6) {
      n.resources = {32'000, 128LL << 30, {}};
    } else {
      n.resources = {1'000, 2LL << 30, {}};
      n.labels["geo-location"] =
          std::to_string(52.5 + (i % 97) * 0.0005) + "," + std::to_string(13.4 + (i % 89) * 0.0005);
      n.labels["battery-level"] = std::to_string(20 + (i * 7) % 80);
      n.labels["battery-capacity"] = "4000";
    }
  }
  return nodes;
}

}  // namespace berth::sim
