// TaskOrder: the one sort plugin of the sampling queue (docs/threephase.md,
// "The scheduler instance", step 1). Before(a, b) is true when a is sampled
// first. Must be a strict weak order; called under the queue's lock, so it
// must be cheap.
#pragma once

#include <cstdint>

#include "agent/protocol.h"

namespace berth::threephase {

// A task waiting in the sampling queue.
struct QueuedTask {
  agent::PlacementTask task;
  uint64_t arrival = 0;      // submission order, for ties
  int attempts = 0;          // attempts made so far
  int64_t submitted_ns = 0;  // steady-clock time of submission
  // Summed over the attempts so far, for the task's outcome.
  int64_t sampling_ns = 0, decision_ns = 0, commit_ns = 0;
  int conflicts = 0;
  // The last attempt found no node that passed: the next one asks every
  // agent (SchedulerInstance, "widening").
  bool widen = false;
};

class TaskOrder {
 public:
  virtual ~TaskOrder() = default;
  virtual bool Before(const QueuedTask& a, const QueuedTask& b) const = 0;
};

// The default: priority descending, then arrival order.
class PriorityThenArrival final : public TaskOrder {
 public:
  bool Before(const QueuedTask& a, const QueuedTask& b) const override {
    if (a.task.priority != b.task.priority) return a.task.priority > b.task.priority;
    return a.arrival < b.arrival;
  }
};

}  // namespace berth::threephase
