// JobAdmission: one fair-share iteration (fairshare::Admission, the
// algorithm of docs/admission.md) over the jobs that are not killed, in
// arrival order (the revision of their last write). W is the workers of
// the ready, active nodes (their "slots", default 1), or with agents one
// per node of every agent. Admitted tasks become pending (the placement
// step places them); tasks stopped by rebalancing go back to waiting
// ("preempted by rebalance"; Pass::Requeue stops their run on its node,
// with the template's stop grace, and their next run is a new one). An
// admitted task counts as running from admission on, so a task the engine
// cannot place yet keeps its worker instead of letting admission start
// more. A job's waiting tasks are offered longest expected duration first
// (the mean of the durations recorded under their name: steps/jobs.h).
//
// What `task why` tells of a waiting task is stored as the admission status
// (kind "admission", id "status": per class its entitlement, running and
// waiting tasks, and the idle workers) when it changes.
#pragma once

#include <optional>
#include <string>

#include "daemon/loop/pass.h"
#include "fairshare/admission.h"

namespace berth::daemon {

class JobAdmission {
 public:
  // `workers`: W.
  JobAdmission(Pass& pass, int64_t workers) : pass_(pass), workers_(workers) {}
  void Admit(fairshare::Admission& admission);

 private:
  void Explain(const fairshare::Config& config, const fairshare::IterationResult& result);
  std::optional<Duration> ExpectedDuration(const TaskEntry& e) const;
  std::string RetryNote(const TaskEntry& e) const;

  Pass& pass_;
  int64_t workers_;
};

}  // namespace berth::daemon
