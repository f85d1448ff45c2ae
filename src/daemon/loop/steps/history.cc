#include "daemon/loop/steps/history.h"

#include <algorithm>
#include <string>
#include <vector>

namespace berth::daemon {

void History::Prune(int64_t limit) {
  if (limit < 0) return;
  std::vector<std::string> groups = history_.TakeGrown();
  if (pass_.summary.visited_all) groups = history_.Groups();  // rebuilt: every group
  for (const std::string& id : pass_.DirtyServices())
    if (auto svc = pass_.FindService(id); svc == pass_.services().end() || svc->second.replicas)
      groups.push_back(id);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  auto valid = [&](const TaskHistory::Ended& ended) {
    const TaskEntry& e = pass_.task(ended.position);
    return e.live() && e.revision == ended.revision && e.terminal() && !e.changed;
  };
  for (const std::string& group : groups) {
    const auto svc = pass_.FindService(group.substr(0, group.find('\n')));
    uint64_t keep = 0;
    if (svc != pass_.services().end()) keep = static_cast<uint64_t>(limit);
    for (uint32_t position : history_.Trim(group, keep, valid)) pass_.Prune(pass_.task(position));
  }
}

}  // namespace berth::daemon
