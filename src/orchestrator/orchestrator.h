// Orchestrator rules: desired state vs actual, as values in and decisions
// out (docs/architecture.md, "src/orchestrator"). One implementation for
// `berth plan`'s placement documents (api/plan_codec) and berthd's control
// loop (daemon/loop/pass), so both make the same tasks from the same
// services: both count a service's tasks in an orchestrator::ServiceTally and
// ask it.
//
//  - Replicas: a replicated service short of its count gets new tasks in
//    its free slots, lowest first (NewSlots of service_tally.h; `berth plan`
//    names them "<service>.<n>" with NewReplicaIds).
//  - Global services: a node without a runnable task of the service gets one
//    (`berth plan` names it "<service>.<node>", or "<service>.<node>.<k>"
//    with the lowest k >= 2 when that id is taken by an earlier task there).
//  - Scale-down: a service over its count stops pending tasks first, then
//    the highest slots.
//
// berthd names its tasks so that an id is never reused for the life of the
// store (TaskId): a slot's or node's successive tasks, and the tasks of a
// service removed and created again, all differ.
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

// Whether an ended task still holds its slot (or its global service's node):
// its restart policy did not restart it, and berthd set its desired state to
// complete so that the slot is not filled again (a scale-down or an update
// frees it). The tally counts it as runnable.
inline bool KeptBySlot(TaskState state, TaskState desired) {
  return desired == TaskState::kComplete && state > TaskState::kRunning;
}

// Whether a task id is in use (by a task the caller still sees).
using Taken = std::function<bool(const std::string&)>;

// The id of a new task of global service `service` on `node`.
std::string GlobalTaskId(std::string_view service, std::string_view node, const Taken& taken);

// The replica number of "<service>.<n>", or -1 for another id.
int64_t ReplicaNumber(std::string_view task_id);

// berthd's id for a new task of `service` in slot `slot` (replicated) or on
// node `node` (global): "<service>.<slot>.<serial>" or
// "<service>.<node>.<serial>", where `serial` is the store revision the pass
// that makes it started from. Unique: a pass makes at most one task per slot
// or node, and a pass that makes tasks commits, so the next one starts from
// a later revision.
std::string TaskId(std::string_view service, std::string_view slot_or_node, int64_t serial);
// The serial of such an id: its number after the last dot (-1: none, as in
// the ids of older versions, "<service>.<n>", read as serial n).
inline int64_t SerialOf(std::string_view task_id) { return ReplicaNumber(task_id); }

// A runnable task of a service over its count.
struct ScaleDownCandidate {
  std::string_view id;
  bool pending = false;  // not placed yet
};
// Which of `tasks` (indices into it) to stop so that `keep` remain: pending
// ones first, then the highest replica numbers.
std::vector<size_t> ChooseScaleDown(const std::vector<ScaleDownCandidate>& tasks, uint64_t keep);

}  // namespace berth::orchestrator
