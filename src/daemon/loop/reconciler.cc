#include "daemon/loop/reconciler.h"

#include <optional>

#include "daemon/loop/steps/admission.h"
#include "daemon/loop/steps/agents.h"
#include "daemon/loop/steps/global_tasks.h"
#include "daemon/loop/steps/history.h"
#include "daemon/loop/steps/jobs.h"
#include "daemon/loop/steps/node_lifecycle.h"
#include "daemon/loop/steps/placement.h"
#include "daemon/loop/steps/rebalance.h"
#include "daemon/loop/steps/replicas.h"
#include "daemon/loop/steps/restarts.h"
#include "daemon/loop/steps/rolling_update.h"
#include "daemon/loop/steps/task_runs.h"
#include "daemon/registry/class_registry.h"

namespace berth::daemon {

using api::Json;

// The class configuration changes rarely; the Admission (and its rebalance
// timer) lives across passes and takes a new configuration when the stored
// one changes.
Status Reconciler::LoadClasses() {
  const std::optional<store::StoredObject>& stored = state_.classes();
  const int64_t revision = stored ? stored->revision : 0;
  if (revision == classes_revision_) return Status::Ok();
  fairshare::Config config;
  if (stored) {
    const Json body = Json::parse(stored->body, nullptr, false);
    if (body.is_discarded()) return Status::Internal("the stored class configuration is not JSON");
    Result<fairshare::Config> decoded = ClassRegistry::ToConfig(body);
    if (!decoded.ok()) return decoded.status();
    config = std::move(*decoded);
  }
  admission_.mutable_config() = std::move(config);
  classes_revision_ = revision;
  return Status::Ok();
}

// The steps of a pass, in order (docs/architecture.md, "The control loop").
// Each gets what it needs of the state; the Pass records what they change.
Status Reconciler::RunSteps(Pass& pass) {
  Rollouts& rollouts = state_.rollouts();
  GlobalTasks global(pass);
  Restarts restarts(pass, state_.restart_attempts(), rollouts, global);
  Replicas replicas(pass, rollouts);
  RollingUpdate updates(pass, rollouts);
  Rebalance rebalance(pass, rollouts, updates);
  NodeLifecycle nodes(pass, state_.not_ready(), options_.lifecycle);
  Jobs jobs(pass);
  std::optional<Agents> agents;
  if (agents_ != nullptr) agents.emplace(pass, *agents_, restarts, replicas, global);

  if (agents) agents->CheckBindings();
  TaskRuns(pass, jobs, nodes, restarts, updates, rebalance).Run();
  updates.Open();
  rebalance.BeforeRollouts();
  updates.Advance();
  replicas.ScaleDown();
  JobAdmission(pass, agents_ != nullptr ? agents_->Workers() : state_.Workers()).Admit(admission_);
  if (agents) {
    agents->Place();
  } else {
    BERTH_RETURN_IF_ERROR(Placement(pass, state_, replicas, global, rebalance).Place(full_view_));
  }
  History(pass, state_.history()).Prune(options_.task_history_limit);
  return Status::Ok();
}

// A pass edits the StoredState as it goes; if it fails, the store does not
// have its edits, so the state is read again.
Result<PassSummary> Reconciler::RunPass(Timestamp now) {
  BERTH_RETURN_IF_ERROR(state_.Refresh(store_));
  BERTH_RETURN_IF_ERROR(LoadClasses());
  Pass pass(now, state_, executor_, agents_);
  if (Status steps = RunSteps(pass); !steps.ok()) {
    state_.Invalidate();
    executor_.Discarded();
    return steps;
  }
  pass.StampAssigned(clock_ != nullptr ? clock_->Now() : now);
  std::vector<store::Write> writes = pass.Writes();
  int64_t revision = 0;
  std::vector<int64_t> revisions;  // each write's, when the pass went in parts
  if (!writes.empty()) {
    Result<int64_t> committed = store_.CommitOwn(writes, &revisions);
    if (!committed.ok()) {
      state_.Invalidate();
      executor_.Discarded();
      return committed.status();
    }
    revision = *committed;
    pass.summary.wrote = true;
  }
  pass.Committed(revision, revisions);
  pass.ObserveLatencies(create_to_assigned_, create_to_running_);
  executor_.Committed(revision != 0 ? revision : store_.revision());
  std::shared_ptr<const CountsSnapshot> counts =
      state_.PublishCounts(revision != 0 ? revision : state_.revision());
  {
    std::lock_guard lock(counts_mu_);
    counts_ = std::move(counts);
  }
  if (std::optional<Timestamp> due = state_.NextTimer()) pass.summary.DueAt(*due);
  pass.summary.waiting = agents_ != nullptr && agents_->Busy();
  // Iterate fires a rebalance once the spread has been over its threshold
  // for longer than the minimum duration.
  if (std::optional<Timestamp> since = admission_.over_since())
    pass.summary.DueAt(*since + admission_.config().RebalanceMinDuration() + Duration{1});
  if (agents_ != nullptr)
    if (std::optional<Timestamp> due = agents_->NextDue()) pass.summary.DueAt(*due);
  return pass.summary;
}

}  // namespace berth::daemon
