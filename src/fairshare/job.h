// The jobs an admission iteration reads and the answer it gives: plain
// values shared by Admission (fairshare/admission.h) and the task choice
// (fairshare/task_choice.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"

namespace berth::fairshare {

struct RunningTask {
  std::string id;
  Timestamp started_at;
};

struct WaitingTask {
  std::string id;
  // The mean of the task's recorded durations; absent when none is recorded.
  std::optional<Duration> expected_duration;
};

struct Job {
  std::string id;
  std::string requestor;
  std::vector<RunningTask> running;
  // In the order the job hands them out: longest expected duration first,
  // unknown after known, ties in job order. Owners keep lists so as tasks
  // arrive (a stopped task goes back to the front); OrderWaitingTasks
  // (fairshare/task_choice.h) sorts a list that is in job order.
  std::vector<WaitingTask> waiting;
};

// A task of the input: jobs[job].waiting[task] (starts) or jobs[job].running[task] (stops).
struct TaskRef {
  uint32_t job = 0;
  uint32_t task = 0;
  friend bool operator==(const TaskRef&, const TaskRef&) = default;
};

struct IterationResult {
  std::vector<int64_t> start;  // per class, in class order
  std::vector<int64_t> stop;   // per class, in class order
  // Waiting tasks to start, class by class in class order, each class's in
  // the order step 7 chooses them.
  std::vector<TaskRef> start_tasks;
  // Running tasks to stop (only when rebalancing), newest first within each
  // class. Each goes back to the front of its job's waiting tasks.
  std::vector<TaskRef> stop_tasks;
  bool rebalanced = false;
  // What explains a wait (berthd's `task why`), per class in class order as
  // at the start of the iteration: its entitlement (step 1's target), its
  // running and waiting tasks; and the workers left idle after it.
  std::vector<int64_t> target, running, waiting;
  int64_t idle = 0;
};

}  // namespace berth::fairshare
