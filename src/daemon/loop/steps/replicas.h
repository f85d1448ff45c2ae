// Replicas: a replicated service runs `replicas` tasks, one per slot.
//  - Generate: the missing slots (orchestrator::NewSlots over the service's
//    tally) become pending tasks, services by id, so tasks are made in a
//    fixed order, as `berth plan`'s decoder makes them.
//  - ScaleDown: a service with more runnable tasks than replicas (plus the
//    old halves of start-first pairs its rollout keeps) stops the extra
//    ones: pending tasks first, then the highest replica numbers (from the
//    tally; by a visit of its tasks when the tally cannot tell).
// Both look only at the services whose tally moved (Pass::DirtyServices).
#pragma once

#include <string>
#include <vector>

#include "daemon/loop/pass.h"

namespace berth::daemon {

class Replicas {
 public:
  Replicas(Pass& pass, const Rollouts& rollouts) : pass_(pass), rollouts_(rollouts) {}
  void Generate();
  void ScaleDown();

 private:
  // The runnable tasks of `service` the engine sees, by a visit of every
  // task: scale-down's rule when its tally cannot answer.
  std::vector<TaskEntry*> RunnableTasksOf(const std::string& service);

  Pass& pass_;
  const Rollouts& rollouts_;
};

}  // namespace berth::daemon
