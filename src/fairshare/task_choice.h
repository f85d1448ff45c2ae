// Which tasks carry out an iteration's counts (spec/fairshare.md, step 7 and
// "Which tasks stop"). Used by Admission::Iterate; separate so each rule can
// be tested on its own.
//
// Starts, within one class: group the class's jobs by running count and visit
// the groups from 0 upward; in a group, take the jobs in arrival order and
// start the next waiting task of each; a job with tasks left moves to the end
// of the next group up. Within a job, waiting tasks go longest expected
// duration first, unknown durations after known ones, ties in job order.
//
// Stops, within one class: the most recently started of its running tasks,
// newest first; ties by job arrival order, then by the job's running order.
//
// Pure functions; cost grows with the jobs of the class and the tasks chosen.
#pragma once

#include <span>

#include "fairshare/admission.h"

namespace berth::fairshare {

// Up to `count` waiting tasks of the jobs in `class_jobs` (indexes into
// `jobs`, arrival order), appended to `out` in the order chosen.
void ChooseStarts(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                  std::vector<TaskRef>* out);

// Up to `count` running tasks of the jobs in `class_jobs`, newest first.
void ChooseStops(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                 std::vector<TaskRef>* out);

// Fills result.start_tasks and result.stop_tasks from result.start and
// result.stop, class by class in class order.
void ChooseTasks(std::span<const Job> jobs, std::span<const ClassIndex> job_class,
                 IterationResult& result);

}  // namespace berth::fairshare
