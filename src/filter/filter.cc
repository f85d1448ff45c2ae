#include "filter/filter.h"

namespace berth::filter {

std::string CountNodes(int nodes, const char* prefix, const char* suffix) {
  return std::string(prefix) + std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") + suffix;
}

}  // namespace berth::filter
