#include "daemon/loop/steps/jobs.h"

namespace berth::daemon {

void Jobs::Run(TaskEntry& e, const StoredJob* job, bool node_gone) {
  const TaskState state = e.task.state;
  pass_.SetInPlan(e, state != TaskState::kNew && !node_gone);
  if (e.terminal()) return;
  if (job == nullptr || job->killed) {
    pass_.SetState(e, TaskState::kShutdown, "job was killed", true);
    pass_.SetInPlan(e, false);
    ++pass_.summary.stopped;
  } else if (node_gone) {
    pass_.Requeue(e, "node '" + e.task.node + "' was removed; waiting again");
  } else if (state == TaskState::kAssigned) {
    pass_.Start(e, pass_.services().end());
  } else if (state == TaskState::kRunning) {
    const int64_t ms = pass_.Finish(e, pass_.services().end());
    if (ms < 0) return;
    pass_.RecordDuration(DurationName(e), ms);
    Ended(e, *job);
  }
}

// The failed run's message stays in the task's message (and so in `task
// why` and the history): "exit status 3; retry 1 of 2".
void Jobs::Ended(TaskEntry& e, const StoredJob& job) {
  if (e.task.state == TaskState::kComplete) return pass_.SetDesired(e, TaskState::kComplete);
  if (e.task.retries >= job.max_retries) {
    if (job.max_retries > 0)
      pass_.SetState(e, e.task.state,
                     e.task.message + "; failed after " + std::to_string(job.max_retries) +
                         (job.max_retries == 1 ? " retry" : " retries"));
    return pass_.SetDesired(e, TaskState::kShutdown);
  }
  ++e.task.retries;
  pass_.Requeue(e, e.task.message + "; retry " + std::to_string(e.task.retries) + " of " +
                       std::to_string(job.max_retries) + ", waiting again");
}

}  // namespace berth::daemon
