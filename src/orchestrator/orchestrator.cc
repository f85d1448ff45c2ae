#include "orchestrator/orchestrator.h"

#include <algorithm>

namespace berth::orchestrator {

std::string GlobalTaskId(std::string_view service, std::string_view node, const Taken& taken) {
  std::string id = std::string(service) + "." + std::string(node);
  if (!taken(id)) return id;
  for (uint64_t k = 2;; ++k)
    if (std::string numbered = id + "." + std::to_string(k); !taken(numbered)) return numbered;
}

std::string TaskId(std::string_view service, std::string_view slot_or_node, int64_t serial) {
  std::string id;
  id.reserve(service.size() + slot_or_node.size() + 22);
  id.append(service).append(".").append(slot_or_node).append(".").append(std::to_string(serial));
  return id;
}

int64_t ReplicaNumber(std::string_view id) {
  const size_t dot = id.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == id.size()) return -1;
  int64_t n = 0;
  for (size_t i = dot + 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9' || n > 1'000'000'000) return -1;
    n = n * 10 + (id[i] - '0');
  }
  return n;
}

// Keys are computed once and only the tasks to stop are ordered, so
// stopping one task of a million costs one pass over them, not a sort.
std::vector<size_t> ChooseScaleDown(const std::vector<ScaleDownCandidate>& tasks, uint64_t keep) {
  if (tasks.size() <= keep) return {};
  // Ascending key = stopped first: pending before placed, then higher numbers.
  std::vector<std::pair<std::pair<bool, int64_t>, size_t>> keyed;
  keyed.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i)
    keyed.push_back({{!tasks[i].pending, -ReplicaNumber(tasks[i].id)}, i});
  const size_t stop = tasks.size() - keep;
  std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(stop), keyed.end());
  std::vector<size_t> order;
  order.reserve(stop);
  for (size_t i = 0; i < stop; ++i) order.push_back(keyed[i].second);
  return order;
}

}  // namespace berth::orchestrator
