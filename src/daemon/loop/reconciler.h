// Reconciler: one pass of berthd's control loop (docs/architecture.md, "From a
// request to a running task")
// over the store. It is the only writer of tasks (kind "task").
//
// A pass brings its StoredState up to date with the store's changes (the
// first one reads everything), and then, in one store commit:
//  1. runs the executor (executor/executor.h; the simulated one unless
//     another is given): an assigned task starts (running); a running task
//     the executor reports ended completes or fails (the simulated one: a
//     job's task, or a service's with a run, once its duration has passed),
//     and a job task's duration is recorded under the task's name;
//  2. stops tasks that should no longer run: their service was removed
//     (shutdown), their node was removed (orphaned), their service has a
//     newer spec version (shutdown, replaced), or their service has more
//     tasks than replicas (shutdown, pending ones and the highest ids first),
//     their job was killed (shutdown); a job's task whose node was removed
//     waits again;
//  3. admits batch jobs' waiting tasks by fair-share class
//     (fairshare::Admission over the ready, active nodes' slots): admitted
//     tasks become pending, tasks stopped by rebalancing wait again;
//  4. runs the full-view placement engine on the rest, exactly as `berth
//     plan` does (api::PlanPlacement): missing replicas and global tasks are
//     created, pending tasks are assigned or keep the engine's explanation
//     as their message. With external agents (an AgentPlacement), the
//     three-phase path instead: the outcomes that arrived since the last
//     pass are applied (a bound task is assigned to the agent's node and
//     records "agent"), missing replicas are created, a global service gets
//     a task pinned to each of the agents' nodes where it may run (recording
//     "agent" and "node" while pending), and pending tasks are
//     handed to the agents' scheduler, whose decisions within
//     AgentPlacementOptions::decide_within are applied in the same pass;
//     after the commit, the bindings of tasks that stopped are released on
//     their agents (queued to AgentPlacement's calls thread). The first
//     such pass, one every 30 s and one after a failed release queue a
//     comparison of the agents' bindings with the store
//     (AgentPlacement::CheckBindings): strays are released, lost ones bound
//     again, and a task that cannot be bound again fails, to be replaced,
//     in the pass that takes the verdict.
//  5. deletes ended tasks of services beyond the history limit
//     (ReconcilerOptions::task_history_limit per replica slot, or per node of
//     a global service; the most recently written are kept; a removed
//     service keeps none). A job's tasks are kept as long as the job.
// Each step looks only at what changed (the visit list, the services whose
// tally moved, the history groups that grew: pass.h, stored_state.h).
// Every write carries its revision precondition, so a pass that raced an
// API write fails as a whole (Conflict) and the next pass starts over.
//
// A stored task is a placement-document task (docs/plan.md) plus "message",
// the last status message. Not thread-safe: one control loop calls RunPass.
#pragma once

#include <cstdint>

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
};

}  // namespace berth::daemon
