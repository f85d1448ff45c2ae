// JobRegistry: batch jobs in berthd. A job has a requestor (which decides its
// fair-share class), an optional task template (resources, constraints...,
// as for a one-off task of docs/plan.md) and a list of tasks, each with a
// name (its identity for recorded durations), a duration and an outcome for
// the simulated executor.
//
// Submitting stores the job and all its tasks in one commit, tasks in state
// "new" (waiting for admission), so an acknowledged job is never partly
// there. Killing marks the job; the control loop stops its tasks. Jobs are
// admitted in arrival order, which is the store revision of their submission.
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

class JobRegistry {
 public:
  JobRegistry(store::Store& store, const Clock& clock)
      : store_(store), jobs_(store, "job"), clock_(clock) {}

  // Body: {"id", "requestor", "task"?: template,
  //        "tasks": [{"name"?, "duration"?: seconds (default 1), "outcome"?: "complete" | "fail"}]}
  // Task i is "<job>.<i+1>"; its name defaults to its id.
  Result<api::Json> Submit(const api::Json& job);
  Result<api::Json> Get(std::string_view id) const;  // the job and its tasks' states
  Result<api::Json> List() const;                    // {"jobs": [...]}, arrival order
  Result<api::Json> Kill(std::string_view id);

 private:
  store::Store& store_;
  StoredKind jobs_;
  const Clock& clock_;
};

}  // namespace berth::daemon
