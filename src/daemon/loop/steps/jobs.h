// Jobs: a batch job's task, visited by TaskRuns. It is stopped when its job
// is killed, waits again when its node is gone, and is run by the executor:
// assigned -> running -> complete or failed, recording how long it ran
// under its name (admission orders waiting tasks by those durations:
// steps/admission.h).
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
  // `killed`: its job was killed (or is gone); `node_gone`: its node was
  // removed.
  void Run(TaskEntry& e, bool killed, bool node_gone);

 private:
  Pass& pass_;
};

}  // namespace berth::daemon
