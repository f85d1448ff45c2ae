#include "daemon/loop/task_history.h"

#include <algorithm>

namespace berth::daemon {

void TaskHistory::Add(const std::string& group, Ended ended) {
  groups_[group].push_back(ended);
  grown_.insert(group);
}

std::vector<std::string> TaskHistory::TakeGrown() {
  std::vector<std::string> grown(grown_.begin(), grown_.end());
  grown.insert(grown.end(), stale_.begin(), stale_.end());
  grown_.clear();
  std::sort(grown.begin(), grown.end());
  grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
  return grown;
}

std::vector<uint32_t> TaskHistory::Trim(const std::string& group, uint64_t keep,
                                        const Valid& valid) {
  std::vector<uint32_t> trimmed;
  auto it = groups_.find(group);
  if (it == groups_.end()) return trimmed;
  std::deque<Ended>& ended = it->second;
  if (stale_.erase(group) != 0) std::erase_if(ended, [&](const Ended& e) { return !valid(e); });
  while (ended.size() > keep) {
    if (valid(ended.front())) trimmed.push_back(ended.front().position);
    ended.pop_front();
  }
  if (ended.empty()) groups_.erase(it);
  return trimmed;
}

std::vector<std::string> TaskHistory::Groups() const {
  std::vector<std::string> keys;
  for (const auto& [key, ended] : groups_) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace berth::daemon
