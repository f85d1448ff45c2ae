// StoppingCopies: the copies the loop stopped, by slot (or a global
// service's node: the history group, TaskHistory::GroupKey), so that the
// slot's next copy does not start while the stopped one may still run on
// its machine (SwarmKit's restart supervisor waits for the old task to stop
// likewise). The wait ends when the machine reports the end
// (Executor::Stopping) or at the copy's stop grace plus kStopReportSlack.
// In memory only: a restarted berthd does not wait.
//
// Not thread-safe: the control loop's thread.
#pragma once

#include <chrono>
#include <string>
#include <unordered_map>

#include "core/time.h"

namespace berth::daemon {

// Past the stop grace, the time a machine takes to kill the process and
// report its end.
inline constexpr Duration kStopReportSlack = std::chrono::seconds(2);

class StoppingCopies {
 public:
  struct Copy {
    std::string run_id, node;
    Timestamp until;      // the wait ends then at the latest
    bool waited = false;  // a next copy has waited for it
  };
  // The loop stopped `copy` at `now`; expired ones are forgotten now and
  // then, so that slots that get no next copy do not pile up.
  void Stopped(const std::string& group, Copy copy, Timestamp now) {
    if (by_group_.size() >= next_prune_) {
      std::erase_if(by_group_, [&](const auto& entry) { return entry.second.until <= now; });
      next_prune_ = 2 * by_group_.size() + 64;
    }
    by_group_[group] = std::move(copy);
  }
  bool empty() const { return by_group_.empty(); }
  Copy* Of(const std::string& group) {
    const auto it = by_group_.find(group);
    return it == by_group_.end() ? nullptr : &it->second;
  }
  void Forget(const std::string& group) { by_group_.erase(group); }

 private:
  std::unordered_map<std::string, Copy> by_group_;
  size_t next_prune_ = 64;
};

}  // namespace berth::daemon
