// Reconciler: one pass of berthd's control loop over the store
// (docs/architecture.md, "From a request to a running task"). It is the only
// writer of tasks (kind "task").
//
// A pass brings its StoredState up to date with the store's changes (the
// first one reads everything), runs its steps in this order (RunSteps; each
// in its own file under steps/, with its contract), and commits what they
// changed in one store commit:
//  1. agents.h, CheckBindings (three-phase only): bindings the agents lost;
//  2. task_runs.h: each visited task goes to the step that owns its case:
//     the executor starts assigned tasks and reports ended ones; jobs.h,
//     node_lifecycle.h (drained, down, relabelled nodes), restarts.h (the
//     restart policy), rolling_update.h and rebalance.h (older versions);
//     tasks of removed services stop, tasks of removed nodes are orphaned;
//  3. rolling_update.h and rebalance.h: rollouts advance batch by batch;
//  4. replicas.h, ScaleDown: services above their replica count;
//  5. admission.h: batch jobs' waiting tasks admitted by fair-share class;
//  6. placement.h: the full-view engine, exactly as `berth plan` decides
//     (missing replicas and global tasks first: replicas.h,
//     global_tasks.h); or, with agents, agents.h, Place: the three-phase
//     path, whose decisions within AgentPlacementOptions::decide_within are
//     applied in the same pass, the bindings of stopped tasks released
//     after the commit;
//  7. history.h: ended tasks beyond the history limit are deleted.
// Each step looks only at what changed (the visit list, the services whose
// tally moved, the history groups that grew: pass.h, stored_state.h).
// Every write carries its revision precondition, so a pass that raced an
// API write fails as a whole (Conflict) and the next pass starts over.
//
// A stored task is a placement-document task (docs/plan.md) plus "message",
// the last status message. Not thread-safe: one control loop calls RunPass.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "core/histogram.h"
#include "core/status.h"
#include "core/time.h"
#include "daemon/loop/agent_placement.h"
#include "daemon/loop/full_view.h"
#include "daemon/loop/pass.h"
#include "daemon/loop/stored_state.h"
#include "daemon/nodes/node_lifecycle_options.h"
#include "executor/simulated_executor.h"
#include "fairshare/admission.h"
#include "store/watched_store.h"

namespace berth::daemon {

struct ReconcilerOptions {
  // Ended tasks kept per replica slot of a service (per node of a global
  // service), as Docker's --task-history-limit; older ones are deleted.
  // Negative: none is deleted. Default 5.
  int64_t task_history_limit = 5;
  // Grace periods of nodes that are not ready (berthd sets them from
  // DaemonOptions::node_lifecycle).
  NodeLifecycleOptions lifecycle;
  // The full-view engine's (berthd --placement-strategy; default spread).
  placement::SchedulerOptions placement;
};

class Reconciler {
 public:
  // `agents`: place through external agents (see 4. above); null: the
  // full-view engine. `clock`: stamps assigned_at just before a pass's
  // commit; null: the pass's `now`. Neither is owned.
  // `executor`: runs placed tasks (not owned); null: a SimulatedExecutor of
  // the reconciler's own.
  explicit Reconciler(store::WatchedStore& store, AgentPlacement* agents = nullptr,
                      const Clock* clock = nullptr, ReconcilerOptions options = {},
                      executor::Executor* executor = nullptr)
      : store_(store),
        agents_(agents),
        clock_(clock),
        options_(options),
        executor_(executor != nullptr ? *executor : simulated_),
        full_view_(options.placement) {
    state_.set_track_pending(agents != nullptr);
  }
  Result<PassSummary> RunPass(Timestamp now);
  // The views' counts (counts.h) as the last successful pass left them;
  // null before the first. Safe from any thread.
  std::shared_ptr<const CountsSnapshot> counts() const {
    std::lock_guard lock(counts_mu_);
    return counts_;
  }
  // For /metrics, safe from any thread: a task's time from created_at to
  // its first assignment and its first run (Pass::ObserveLatencies), and
  // the full-view engine's time per group (empty on the three-phase path).
  const Histogram& create_to_assigned() const { return create_to_assigned_; }
  const Histogram& create_to_running() const { return create_to_running_; }
  const Histogram& engine_group_durations() const { return full_view_.group_durations(); }

 private:
  Status LoadClasses();
  Status RunSteps(Pass& pass);

  store::WatchedStore& store_;
  AgentPlacement* agents_;
  const Clock* clock_;
  ReconcilerOptions options_;
  executor::SimulatedExecutor simulated_;
  executor::Executor& executor_;
  StoredState state_;
  FullView full_view_;  // the full-view engine's state, without agents
  fairshare::Admission admission_;
  int64_t classes_revision_ = -1;  // of the configuration admission_ holds
  mutable std::mutex counts_mu_;
  std::shared_ptr<const CountsSnapshot> counts_;
  Histogram create_to_assigned_{Histogram::WaitBounds()},
      create_to_running_{Histogram::WaitBounds()};
};

}  // namespace berth::daemon
