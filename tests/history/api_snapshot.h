// SnapshotFromApi: berthd's list answers (docs/api.md) as a history
// Snapshot. The pure half of the recorder (recorder.h does the HTTP), so the
// translation is tested without a berthd.
//
// A task's JSON does not carry its reservations: a task runs its service's
// (or job's) template, which it does not copy. So they are looked up as
// berthd's GET /v1/nodes/{id} does (daemon/task_views.cc, NodeUsage): the
// owner's `task.resources`, or `previous_task.resources` for a task of an
// older spec version. A task whose owner is not listed (removed between
// the requests) or is a later service of the same name (its serial is
// below the service's `incarnation`) counts as reserving nothing, so rule
// 3's sums are lower bounds and what it reports is real. Quantities are
// read as berthd reads them: CPUs as a number or "500m", bytes as a number
// or "512Mi". Generic resources are not modelled.
//
// Pure function; safe from any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "history/history.h"

namespace berth::history {

// The answers of one read. Read the tasks first and the owners after: a
// service updated in between then shows a spec version above its tasks'
// and lends them `previous_task`, which is theirs.
struct ApiAnswers {
  nlohmann::json tasks;     // GET /v1/tasks: {"tasks": [...]}
  nlohmann::json services;  // GET /v1/services: {"services": [...]}
  nlohmann::json jobs;      // GET /v1/jobs: {"jobs": [...]}
  nlohmann::json nodes;     // GET /v1/nodes: {"nodes": [...]}
  int64_t revision = 0;     // GET /v1/health's, asked after the lists
};

// InvalidArgument: an answer not shaped as docs/api.md says (a missing id,
// an unknown task state, an unreadable quantity).
Result<Snapshot> SnapshotFromApi(const ApiAnswers& answers, const std::string& client,
                                 int64_t time_ms);

}  // namespace berth::history
