// Jobs: a batch job's task, visited by TaskRuns. It is stopped when its job
// is killed, waits again when its node is gone, and is run by the executor
// (a berth-node's process when its job's template has a command and it is
// placed on one, else the simulated executor): assigned -> running ->
// complete or failed, recording how long it ran under its name (admission
// orders waiting tasks by those durations: steps/admission.h).
//
// A failed run (exit status not 0, a command that cannot start) waits for
// admission again while its job's max_retries are not used up, as Scoot
// retries a failed task; after that the task stays failed. An ended task's
// desired state follows it: complete, or shutdown when it failed for good
// (or was killed), as Docker's job tasks.
#pragma once

#include <string>

#include "daemon/loop/pass.h"

namespace berth::daemon {

// The name a job's task records its durations under: its "name", by
// default its id.
inline const std::string& DurationName(const TaskEntry& e) {
  return e.task.name.empty() ? e.task.id : e.task.name;
}

class Jobs {
 public:
  explicit Jobs(Pass& pass) : pass_(pass) {}
  // `job`: its job, null when gone (its tasks stop as a killed job's);
  // `node_gone`: its node was removed.
  void Run(TaskEntry& e, const StoredJob* job, bool node_gone);

 private:
  // A running task's executor says it ended: retried, or ended for good.
  void Ended(TaskEntry& e, const StoredJob& job);

  Pass& pass_;
};

}  // namespace berth::daemon
