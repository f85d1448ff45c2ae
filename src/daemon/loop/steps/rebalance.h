// Rebalance: moving a running service's tasks to where the engine would
// place them now (docs/placement.md, "Rebalancing"). A rebalance is a spec
// version with the same template, rolled out by RollingUpdate. Its tasks of
// older versions are candidates (Candidate, from TaskRuns); when its rollout
// starts (and again after a pass that visits every task) the full view
// says which nodes hold more than it would place there now
// (FullView::RebalanceMoves), and only that many candidates on each become
// outdated, highest slot first; the rest stay as they are. Movers are
// replaced start-first whatever update_config says, their replacements go
// where the target has room, and a mover stops only once its replacement
// has run for `monitor`, so the service never has fewer running tasks than
// when it began; a failure action of rollback pauses. Without the full view
// (agents place the tasks) nothing moves.
//
// After a node joins, each replicated service with "rebalance": "on-join"
// whose last rollout is done is rebalanced (a new spec version, as
// ServiceRegistry::Rebalance makes) if the engine would now place some of
// its tasks elsewhere; one whose rollout has not started, is under way or
// is paused (ServiceRegistry::WhyRebalanceWaits) is asked again later.
#pragma once

#include <string>

#include "daemon/loop/full_view.h"
#include "daemon/loop/pass.h"
#include "daemon/loop/steps/rolling_update.h"

namespace berth::daemon {

class Rebalance {
 public:
  Rebalance(Pass& pass, Rollouts& rollouts, RollingUpdate& updates)
      : pass_(pass), rollouts_(rollouts), updates_(updates) {}
  // A visited task of a version before a rebalance, still meant to run on
  // its node: a candidate to move, until the movers are chosen.
  void Candidate(TaskEntry& e, const std::string& service_id, const StoredService& service);
  // Between RollingUpdate::Open and Advance: pairs replacements in flight
  // with their movers; with agents, the rebalance is skipped at once.
  void BeforeRollouts();
  // After the engine placed this pass's tasks: the movers of the
  // rebalances that start (their rollout starts in the next pass).
  void ChooseAllMovers(const FullView& engine);
  // Then the rebalances that nodes joining (`nodes_joined`, or earlier and
  // still due) call for.
  void OnJoin(const FullView& engine, bool nodes_joined);

 private:
  void ChooseMovers(const std::string& service_id, const StoredService& service, ServiceUpdate& u,
                    const FullView* engine);

  Pass& pass_;
  Rollouts& rollouts_;
  RollingUpdate& updates_;
};

}  // namespace berth::daemon
