// TaskEntry: a stored task as the control loop keeps it between passes
// (stored_state.h), with the bookkeeping that lets a pass cost what changed.
#pragma once

#include <cstdint>
#include <vector>

#include "core/prefault_allocator.h"
#include "daemon/loop/counts.h"
#include "daemon/loop/stored_task.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/service_tally.h"

namespace berth::daemon {

// A stored task, with what the loop keeps about it between passes.
struct TaskEntry {
  StoredTask task;
  int64_t revision = 0;  // 0: created by this pass
  bool changed = false;
  bool in_plan = true;  // handed to the placement engine
  bool pruned = false;  // ended and beyond the history limit: deleted by this pass
  // StoredState's bookkeeping: in the next pass's visit list; in this pass's
  // touched list (pass.h); how the task counts in its service's tally, which
  // tally that is and its replica number there (-1: none), both cached
  // while it counts (the id and service of a counted entry do not change).
  bool queued = false, touched = false;
  uint8_t tally = 0;
  int32_t number = -1;
  orchestrator::ServiceTally* counted_in = nullptr;
  // The full-view engine's record of the task (FullView): its index there,
  // valid while engine_generation is the engine's; kNotInEngine when the
  // engine has none (never had, or forgot it).
  static constexpr uint32_t kNotInEngine = UINT32_MAX;
  uint32_t engine_index = kNotInEngine;
  uint64_t engine_generation = 0;
  CountedAs counted;  // what it adds to the views' counts (counts.h)

  bool live() const { return !task.id.empty(); }  // false: a free entry
  bool terminal() const { return task.state > TaskState::kRunning; }
  // Fills one of its service's slots: not finished and still meant to run.
  bool runnable() const { return orchestrator::Runnable(task.state, task.desired); }
  // Seen by the placement engine: not if its service or node is gone
  // (in_plan), nor if the running pass stopped it while it ran (one that
  // ended, and whose restart set its desired state, still tells the engine
  // its failure: the faulty-node rule).
  bool planned() const {
    return in_plan && !(changed && task.desired == TaskState::kShutdown && !terminal());
  }
  // Holds a binding on its agent (the agent's capacity).
  bool bound_on_agent() const {
    return !task.agent.empty() && task.state >= TaskState::kAssigned && !terminal();
  }
};

// The entries by position, prefaulted: a large service fills millions
// of them at once (core/prefault_allocator.h).
using TaskEntries = std::vector<TaskEntry, PrefaultAllocator<TaskEntry>>;

}  // namespace berth::daemon
