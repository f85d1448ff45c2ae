// Orchestrator rules: desired state vs actual, as values in and decisions
// out (ARCHITECTURE.md, "orchestrator"). One implementation for `berth
// plan`'s placement documents (api/plan_codec) and berthd's control loop
// (daemon/pass), so both make the same tasks from the same services: both
// count a service's tasks in an orchestrator::ServiceTally and ask it.
//
//  - Replicas: a replicated service short of its count gets new tasks
//    "<service>.<n>", lowest n whose id is free first (NewReplicaIds of
//    service_tally.h, answered from the service's tally).
//  - Global services: a node without a runnable task of the service gets one
//    named "<service>.<node>", or "<service>.<node>.<k>" (lowest k >= 2) when
//    that id is taken by an earlier task there.
//  - Scale-down: a service over its count stops pending tasks first, then
//    the highest replica numbers.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/task.h"

namespace berth::orchestrator {

// Whether a task fills one of its service's slots: not finished, still
// meant to run.
inline bool Runnable(TaskState state, TaskState desired) {
  return state <= TaskState::kRunning && desired <= TaskState::kRunning;
}

// Whether a task id is in use (by a task the caller still sees).
using Taken = std::function<bool(const std::string&)>;

// The id of a new task of global service `service` on `node`.
std::string GlobalTaskId(std::string_view service, std::string_view node, const Taken& taken);

// The replica number of "<service>.<n>", or -1 for another id.
int64_t ReplicaNumber(std::string_view task_id);

// A runnable task of a service over its count.
struct ScaleDownCandidate {
  std::string_view id;
  bool pending = false;  // not placed yet
};
// Which of `tasks` (indices into it) to stop so that `keep` remain: pending
// ones first, then the highest replica numbers.
std::vector<size_t> ChooseScaleDown(const std::vector<ScaleDownCandidate>& tasks, uint64_t keep);

}  // namespace berth::orchestrator
