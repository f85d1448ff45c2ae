// Restarts: SwarmKit's restart supervisor. A service's task that ended by
// itself (complete, failed or rejected) while still meant to run is
// replaced or kept by its service's restart policy
// (orchestrator/restart_policy.h): replaced, its desired state becomes
// shutdown and a new task takes its slot (or its node, for a global
// service), pending at once or after the restart delay; kept, its desired
// state becomes complete and its message says why. Attempts are counted per
// slot (or node) within the policy's window. A task of an older template
// is the rolling update's, and half of a start-first pair whose other half
// runs on is not restarted: the slot is held.
#pragma once

#include "daemon/loop/pass.h"
#include "daemon/loop/steps/global_tasks.h"

namespace berth::daemon {

class Restarts {
 public:
  Restarts(Pass& pass, RestartAttempts& attempts, const Rollouts& rollouts, GlobalTasks& global)
      : pass_(pass), attempts_(attempts), rollouts_(rollouts), global_(global) {}
  void RestartOrKeep(TaskEntry& e, const StoredService& service);

 private:
  const TaskEntry* RunningPartner(const TaskEntry& e);

  Pass& pass_;
  RestartAttempts& attempts_;
  const Rollouts& rollouts_;
  GlobalTasks& global_;
};

}  // namespace berth::daemon
