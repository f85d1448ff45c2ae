#include "daemon/loop/steps/jobs.h"

namespace berth::daemon {

void Jobs::Run(TaskEntry& e, bool killed, bool node_gone) {
  const TaskState state = e.task.state;
  pass_.SetInPlan(e, state != TaskState::kNew && !node_gone);
  if (e.terminal()) return;
  if (killed) {
    pass_.SetState(e, TaskState::kShutdown, "job was killed", true);
    pass_.SetInPlan(e, false);
    ++pass_.summary.stopped;
  } else if (node_gone) {
    pass_.Requeue(e, "node '" + e.task.node + "' was removed; waiting again");
  } else if (state == TaskState::kAssigned) {
    pass_.Start(e, pass_.services().end());
  } else if (state == TaskState::kRunning) {
    const int64_t ms = pass_.Finish(e, pass_.services().end());
    if (ms >= 0) pass_.RecordDuration(DurationName(e), ms);
  }
}

}  // namespace berth::daemon
