// JobRegistry: batch jobs in berthd. A job has a requestor (which decides its
// fair-share class), an optional task template (resources, constraints...,
// as for a one-off task of docs/plan.md) and a list of tasks, each with a
// name (its identity for recorded durations), a duration and an outcome for
// the simulated executor.
//
// Submitting stores the job and its tasks' entries (job_parts.h: a few
// objects, however many tasks), tasks in state "new" (waiting for
// admission), so an acknowledged job is never partly there. Killing marks
// the job; the control loop stops its tasks. Jobs are admitted in arrival
// order, which is the store revision of their submission.
//
// Thread-safe (the store is).
#pragma once

#include <string_view>

#include "api/json_fields.h"
#include "core/status.h"
#include "core/time.h"
#include "daemon/registry/stored_kind.h"
#include "store/store.h"

namespace berth::daemon {

inline constexpr size_t kMaxTasksPerJob = 100'000;
// A failed task waits again this many times unless the job says otherwise
// (Scoot retries a failed task a few times too), at most kMaxRetries.
inline constexpr int64_t kDefaultMaxRetries = 2;
inline constexpr int64_t kMaxRetries = 100;

// A job's state from its tasks' counts by state ({"running": 2, ...}):
// "killed" once killed; else "active" while fewer than `tasks` ended; else
// "failed" when one failed for good (or was rejected), "complete" when all
// completed. Not stored: the loop writes tasks only.
const char* JobStateOf(const api::Json& states, int64_t tasks, bool killed);

class JobRegistry {
 public:
  JobRegistry(store::Store& store, const Clock& clock)
      : store_(store), jobs_(store, "job"), clock_(clock) {}

  // Body: {"id", "requestor", "task"?: template, "max_retries"?: 0..100 (default 2),
  //        "tasks": [{"name"?, "duration"?: seconds (default 1), "outcome"?: "complete" | "fail"}],
  //        "commands"?: [[program, arg...], ...] (one per task)}
  // Task i is "<job>.<i+1>"; its name defaults to its id. A template's
  // args and env values may hold `{{.Index}}` (api::ExpandIndex); one that
  // does not expand is refused. With "commands", task i runs entry i (as
  // written) with the template's other process fields, and the template
  // may not have "command" or "args" (api::DecodeSharedProcess).
  Result<api::Json> Submit(const api::Json& job);
  // A job with "states" (how many of its tasks are in each state), its
  // "commands" when it has them (List leaves them out: they are stored
  // with its tasks' entries, job_parts.h), and
  // "state": killed; active while a task has not ended; else failed when a
  // task failed for good, complete when all completed.
  Result<api::Json> Get(std::string_view id) const;
  Result<api::Json> List() const;  // {"jobs": [...]}, arrival order, each as Get's
  Result<api::Json> Kill(std::string_view id);

 private:
  // Stores the `parts` of `submission` and then its `record` (job and name
  // claim); the revision of the record's commit.
  Result<int64_t> CommitJob(const std::string& submission, const std::vector<store::Write>& parts,
                            const std::vector<store::Write>& record);

  store::Store& store_;
  StoredKind jobs_;
  const Clock& clock_;
};

}  // namespace berth::daemon
