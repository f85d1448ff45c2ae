// Agents: the three-phase path (docs/threephase.md), when berthd places
// through external berth-agents (AgentPlacement) instead of the full-view
// engine.
//  - CheckBindings, the first step: due checks get the stored bindings
//    (every task's: a check is rare), and the lost bindings earlier checks
//    found are applied to the tasks still bound there: a service's task
//    fails and is restarted (Restarts); a job's waits again, as when its
//    node is removed.
//  - Place, in the placement step's stead: outcomes that arrived since the
//    last pass are applied (a bound task becomes assigned to the agent's
//    node, unless it stopped meanwhile: then the binding is given back; a
//    failed one keeps pending with the last attempt's reason), missing
//    replicas and global tasks are made (Replicas, GlobalTasks), and every
//    pending task is handed to the agents' scheduler (which ignores those
//    it already has); the decisions that come within `decide_within` are
//    applied before the commit.
#pragma once

#include "daemon/loop/agent_placement.h"
#include "daemon/loop/pass.h"
#include "daemon/loop/steps/global_tasks.h"
#include "daemon/loop/steps/replicas.h"
#include "daemon/loop/steps/restarts.h"

namespace berth::daemon {

class Agents {
 public:
  Agents(Pass& pass, AgentPlacement& agents, Restarts& restarts, Replicas& replicas,
         GlobalTasks& global)
      : pass_(pass), agents_(agents), restarts_(restarts), replicas_(replicas), global_(global) {}
  void CheckBindings();
  void Place();

 private:
  void ApplyOutcomes();

  Pass& pass_;
  AgentPlacement& agents_;
  Restarts& restarts_;
  Replicas& replicas_;
  GlobalTasks& global_;
};

}  // namespace berth::daemon
