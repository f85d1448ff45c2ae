// TaskRuns: the first step of a pass over the tasks it visits (the visit
// list, pass.h). It hands each task to the step that owns its case, in this
// order of precedence:
//  - a job's task: Jobs;
//  - a service's task whose service is gone: stopped (its ended ones are
//    pruned); whose node is gone: orphaned (and replaced);
//  - a task of an older template: RollingUpdate (a rebalance's candidates
//    also go to Rebalance);
//  - a task on a node that may no longer run it: NodeLifecycle;
//  - a task waiting for its restart delay: pending once it has passed;
//  - an assigned task: started by the executor; a running one: asked
//    whether it ended, and then Restarts (an ended one as well).
// A pass that visits every task also tells RollingUpdate which new tasks
// are still in flight (Young).
#pragma once

#include "daemon/loop/pass.h"
#include "daemon/loop/steps/jobs.h"
#include "daemon/loop/steps/node_lifecycle.h"
#include "daemon/loop/steps/rebalance.h"
#include "daemon/loop/steps/restarts.h"
#include "daemon/loop/steps/rolling_update.h"

namespace berth::daemon {

class TaskRuns {
 public:
  TaskRuns(Pass& pass, Jobs& jobs, NodeLifecycle& nodes, Restarts& restarts, RollingUpdate& updates,
           Rebalance& rebalance)
      : pass_(pass),
        jobs_(jobs),
        nodes_(nodes),
        restarts_(restarts),
        updates_(updates),
        rebalance_(rebalance) {}
  void Run();

 private:
  void RunServiceTask(TaskEntry& e, bool node_gone);

  Pass& pass_;
  Jobs& jobs_;
  NodeLifecycle& nodes_;
  Restarts& restarts_;
  RollingUpdate& updates_;
  Rebalance& rebalance_;
};

}  // namespace berth::daemon
