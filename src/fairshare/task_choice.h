// Which tasks carry out an iteration's counts (docs/admission.md, "The
// iteration" step 7, and "Rebalancing": which tasks stop). Used by
// Admission::Iterate; separate so each rule can be tested on its own.
//
// Starts, within one class: group the class's jobs by running count and visit
// the groups from 0 upward; in a group, take the jobs in arrival order and
// start the next waiting task of each; a job with tasks left moves to the end
// of the next group up. A job's next task is the first of its waiting list,
// which the caller keeps in choice order (OrderWaitingTasks).
//
// Stops, within one class: the most recently started of its running tasks,
// newest first; ties by job arrival order, then by the job's running order.
//
// Pure functions; cost grows with the jobs of the class and the tasks chosen,
// never with the tasks left waiting.
#pragma once

#include <span>

#include "fairshare/config.h"
#include "fairshare/job.h"

namespace berth::fairshare {

// Sorts waiting tasks into the order a job hands them out: longest expected
// duration first, unknown durations after known ones, ties keeping their
// order (docs/admission.md, "The iteration", step 7). Stable, O(n log n);
// callers keep lists in this order as tasks arrive, so an iteration never
// sorts.
void OrderWaitingTasks(std::vector<WaitingTask>& waiting);

// Working space for the functions below, reused across calls so that a
// steady stream of iterations allocates no large buffers (fresh pages cost
// more than the work at this size). Contents between calls are meaningless.
struct ChoiceScratch {
  struct Entry {  // a job in a start group, with how many tasks it has started
    uint32_t job;
    uint32_t taken;
  };
  struct Running {  // a running task and how long before the newest it started
    uint64_t age;
    TaskRef task;
  };
  std::vector<std::vector<uint32_t>> class_jobs;
  std::vector<Entry> fresh, group, carried;
  std::vector<Running> running, sorted;
  std::vector<size_t> buckets;
};

// Up to `count` waiting tasks of the jobs in `class_jobs` (indexes into
// `jobs`, arrival order), appended to `out` in the order chosen.
void ChooseStarts(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                  ChoiceScratch& scratch, std::vector<TaskRef>* out);

// Up to `count` running tasks of the jobs in `class_jobs`, newest first.
void ChooseStops(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                 ChoiceScratch& scratch, std::vector<TaskRef>* out);

// Fills result.start_tasks and result.stop_tasks from result.start and
// result.stop, class by class in class order.
void ChooseTasks(std::span<const Job> jobs, std::span<const ClassIndex> job_class,
                 ChoiceScratch& scratch, IterationResult& result);

}  // namespace berth::fairshare
