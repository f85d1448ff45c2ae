// TaskHistory: the ended tasks of each history group, oldest first, so a
// pass deletes those beyond the task-history limit (reconciler.h, step 7)
// by looking at the groups that grew or whose limit changed, not at every
// task.
//
// A group is one slot of a replicated service (key: service id, '\n',
// slot) or one node of a global service (key: service id, '\n', node id),
// as `docker service ps` shows a slot's or node's history. Within a group tasks are held in
// the order they ended: by the revision of the write that ended them, then
// by replica number; the caller adds them in that order. An entry that no
// longer describes its task (the record was reused or deleted) is stale and
// skipped; MarkStale tells the group to drop such entries before counting.
//
// Not thread-safe: the control loop owns it (through StoredState).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace berth::daemon {

class TaskHistory {
 public:
  struct Ended {
    uint32_t position = 0;  // in StoredState::tasks
    int64_t revision = 0;   // of the write that ended it
  };
  // Whether `ended` still describes the task at its position.
  using Valid = std::function<bool(const Ended&)>;

  static std::string GroupKey(const std::string& service, const std::string& member) {
    return service + '\n' + member;
  }

  void Clear() { *this = TaskHistory(); }
  void Add(const std::string& group, Ended ended);
  void MarkStale(const std::string& group) { stale_.insert(group); }
  // Groups that got tasks (or stale entries) since the last call.
  std::vector<std::string> TakeGrown();
  // Removes the oldest valid entries of `group` until at most `keep` valid
  // ones remain and returns their positions, oldest first.
  std::vector<uint32_t> Trim(const std::string& group, uint64_t keep, const Valid& valid);
  // Every group's key (after a full rebuild every group is checked).
  std::vector<std::string> Groups() const;

 private:
  std::unordered_map<std::string, std::deque<Ended>> groups_;
  std::unordered_set<std::string> grown_, stale_;
};

}  // namespace berth::daemon
