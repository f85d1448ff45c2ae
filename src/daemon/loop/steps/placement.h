// Placement: the full-view engine's step (without agents). Missing
// replicas and global tasks are made (Replicas, GlobalTasks), the engine
// (FullView, kept across passes) is synced with the tasks this pass
// visited or touched and the nodes that changed, and runs: pending tasks
// are assigned or keep the engine's explanation as their message, exactly
// as `berth plan` decides them (docs/plan.md). With this pass's nodes in
// the engine, Rebalance then chooses the movers of the rebalances that
// start and the rebalances that joined nodes call for.
#pragma once

#include "core/status.h"
#include "daemon/loop/full_view.h"
#include "daemon/loop/pass.h"
#include "daemon/loop/steps/global_tasks.h"
#include "daemon/loop/steps/rebalance.h"
#include "daemon/loop/steps/replicas.h"

namespace berth::daemon {

class Placement {
 public:
  // `state`: what the engine syncs from (FullView::Sync).
  Placement(Pass& pass, StoredState& state, Replicas& replicas, GlobalTasks& global,
            Rebalance& rebalance)
      : pass_(pass), state_(state), replicas_(replicas), global_(global), rebalance_(rebalance) {}
  // Internal when the engine refuses a stored node or task (FullView::Sync).
  Status Place(FullView& engine);

 private:
  void Apply(const placement::PassResult& result, const FullView& engine);

  Pass& pass_;
  StoredState& state_;
  Replicas& replicas_;
  GlobalTasks& global_;
  Rebalance& rebalance_;
};

}  // namespace berth::daemon
