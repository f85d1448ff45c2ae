// ServiceTally: what the orchestrator's rules need to know about one
// service's tasks, kept up to date task by task so that a pass decides on
// a service of a million tasks without visiting them (orchestrator.h has
// the rules; these answer them from the tally).
//
// A task counts in its service's tally by its replica number n (berthd: its
// slot; `berth plan`: n of its id "<service>.<n>"): `taken` while the caller
// still sees the task (any state),
// `runnable` while it fills a slot, `pending` while it also waits for a node
// (ServiceTally::FlagsOf, Add and Remove: berthd's StoredState keeps tallies
// task by task, `berth plan`'s decoder counts a document's tasks once).
// A task whose id has no such number (a global service's, or a hand-made id)
// only counts in `runnable_count` and `unnumbered`; the rules then fall back
// to the caller's full list (ChooseScaleDown of orchestrator.h).
//
// Not thread-safe: one owner (the control loop).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/task.h"
#include "orchestrator/orchestrator.h"

namespace berth::orchestrator {

// A set of replica numbers as a bitset that grows on demand; numbers of at
// least kLimit are not kept (the tally counts them as unnumbered).
class NumberSet {
 public:
  static constexpr uint64_t kLimit = uint64_t{1} << 24;

  void Set(uint64_t n, bool on);
  bool Test(uint64_t n) const {
    return n / 64 < words_.size() && ((words_[n / 64] >> (n % 64)) & 1) != 0;
  }
  // The lowest number >= `from` not in the set.
  uint64_t NextClear(uint64_t from) const;
  // The highest number < `before` in this set and, if `without` is given,
  // not in `without`; nullopt when there is none.
  std::optional<uint64_t> PrevSet(uint64_t before, const NumberSet* without = nullptr) const;

 private:
  std::vector<uint64_t> words_;
};

struct ServiceTally {
  uint64_t runnable_count = 0;  // tasks that fill a slot, numbered or not
  uint64_t unnumbered = 0;      // of those, without a replica number
  NumberSet taken, runnable, pending;
  // By number: the owner's handle of the runnable task with that number
  // (berthd: its position; kNoHolder when none), so the owner finds the
  // task to stop without an index by id.
  static constexpr uint32_t kNoHolder = UINT32_MAX;
  std::vector<uint32_t> holder;
  // Global services: runnable tasks per node.
  bool global = false;
  std::unordered_map<std::string, uint32_t> covered;
  // The owner's mark: the tally moved since the owner last looked.
  bool dirty = false;

  bool empty() const { return runnable_count == 0 && covered.empty(); }

  // What one task counts as (a union of the flags below) and its replica
  // number (-1: none). Every task the caller sees is taken; one that fills
  // a slot is also runnable (so is one KeptBySlot), and pending while it waits for a node; a
  // runnable task of a global service that has a node covers that node.
  struct Mark {
    static constexpr uint8_t kTaken = 1, kRunnable = 2, kPending = 4, kCovered = 8;
    uint8_t flags = 0;
    int32_t number = -1;
    uint32_t handle = kNoHolder;  // the owner's handle of the task (`holder`)
  };
  // The flags of a task the caller sees, in state `state` with desired
  // state `desired`, with a node or not.
  uint8_t FlagsOf(TaskState state, TaskState desired, bool has_node) const;
  // Counts, or stops counting, a task with `mark` on `node`. Remove takes
  // exactly what Add was given.
  void Add(const Mark& mark, const std::string& node);
  void Remove(const Mark& mark, const std::string& node);
};

// The replica number of `task_id` if it is "<service>.<n>" with n < kLimit.
std::optional<uint64_t> NumberIn(std::string_view service, std::string_view task_id);

// The numbers of the tasks to stop so that `keep` remain (the rule of
// ChooseScaleDown: pending first, then the highest numbers). nullopt when
// the tally has unnumbered runnable tasks: the caller decides over its list.
std::optional<std::vector<uint64_t>> ChooseScaleDown(const ServiceTally& tally, uint64_t keep);

// The slots new tasks fill so that `replicas` are runnable: the lowest
// numbers >= 1 no runnable task holds (berthd: its ids never collide, so an
// ended task's slot is free for its successor).
std::vector<uint64_t> NewSlots(const ServiceTally& tally, uint64_t replicas);

// New tasks' ids for `berth plan` (orchestrator.h) answered from the tally: candidates are the
// numbers not in `taken`, lowest first, each confirmed by `taken_id` (an id
// the tally does not know may still be in use).
std::vector<std::string> NewReplicaIds(std::string_view service, const ServiceTally& tally,
                                       uint64_t replicas, const Taken& taken_id);

}  // namespace berth::orchestrator
