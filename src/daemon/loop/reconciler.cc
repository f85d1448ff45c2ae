#include "daemon/loop/reconciler.h"

#include "daemon/registry/class_registry.h"

namespace berth::daemon {

using api::Json;

// The class configuration changes rarely; the Admission (and its rebalance
// timer) lives across passes and takes a new configuration when the stored
// one changes.
Status Reconciler::LoadClasses() {
  Result<std::optional<store::StoredObject>> stored = ClassRegistry::Stored(store_);
  if (!stored.ok()) return stored.status();
  const int64_t revision = stored->has_value() ? (*stored)->revision : 0;
  if (revision == classes_revision_) return Status::Ok();
  fairshare::Config config;
  if (stored->has_value()) {
    const Json body = Json::parse((*stored)->body, nullptr, false);
    if (body.is_discarded()) return Status::Internal("the stored class configuration is not JSON");
    Result<fairshare::Config> decoded = ClassRegistry::ToConfig(body);
    if (!decoded.ok()) return decoded.status();
    config = std::move(*decoded);
  }
  admission_.mutable_config() = std::move(config);
  classes_revision_ = revision;
  return Status::Ok();
}

// A pass edits the StoredState as it goes; if it fails, the store does not
// have its edits, so the state is read again.
Result<PassSummary> Reconciler::RunPass(Timestamp now) {
  BERTH_RETURN_IF_ERROR(LoadClasses());
  BERTH_RETURN_IF_ERROR(state_.Refresh(store_));
  Pass pass(now, state_, executor_, agents_, options_.lifecycle);
  if (agents_ != nullptr) pass.CheckAgentBindings();
  pass.StartAndStop();
  pass.Update();
  pass.ScaleDown();
  pass.Admit(admission_);
  if (agents_ != nullptr) {
    pass.PlaceThroughAgents();
  } else if (Status placed = pass.Place(full_view_); !placed.ok()) {
    state_.Invalidate();
    executor_.Discarded();
    return placed;
  }
  pass.PruneHistory(options_.task_history_limit);
  pass.StampAssigned(clock_ != nullptr ? clock_->Now() : now);
  std::vector<store::Write> writes = pass.Writes();
  int64_t revision = 0;
  if (!writes.empty()) {
    Result<int64_t> committed = store_.CommitOwn(writes);
    if (!committed.ok()) {
      state_.Invalidate();
      executor_.Discarded();
      return committed.status();
    }
    revision = *committed;
    pass.summary.wrote = true;
  }
  pass.Committed(revision);
  executor_.Committed(revision != 0 ? revision : store_.revision());
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
