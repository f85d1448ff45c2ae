// How `berth` shows tasks (docs/cli.md): the task tables of `task ls`,
// `service ps` and `node ps`, and the progress of a service while `service
// create` and `service update` wait for it to converge.
//
// Tasks are shown as `docker service ps` shows them: by name ("web.1", the
// slot; "mon.n1", a global service's node), a slot's newest task first and
// its older ones under it marked "\_". Pure functions over the API's
// JSON views (daemon/task_views.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "api/json_fields.h"

namespace berth::cli {

struct TaskTableOptions {
  bool history_marks = false;  // "\_ " before a slot's older tasks (service ps, node ps)
  bool no_trunc = false;       // messages in full (default: cut at 60 characters)
};

// The tasks of `answer` ({"tasks": [...]} or one task) in display order:
// by service, then slot (numerically) or node, then newest first.
std::vector<api::Json> InDisplayOrder(const api::Json& answer);
void PrintTaskTable(const api::Json& answer, const TaskTableOptions& options, std::ostream& out);

// Where a service stands against its spec: its slots' newest tasks.
struct ServiceProgress {
  uint64_t desired = 0;  // replicas, or (global) the nodes it has a task for
  uint64_t running = 0;  // of them, running the service's current spec version
  // A slot whose newest task waits with nothing left for berthd to try
  // until something changes (pending with the engine's reason, or ended
  // and not restarted): the service will not converge by itself.
  std::vector<std::string> stuck;
  // Each slot's newest task: its name, state, and node or reason.
  struct Slot {
    std::string name, state, where;
    std::string Line() const { return name + "  " + state + "  " + where; }  // "web.1  running  n1"
    bool operator==(const Slot&) const = default;
  };
  std::vector<Slot> slots;
  bool converged() const { return running == desired && stuck.empty(); }
};
ServiceProgress ProgressOf(const api::Json& service, const api::Json& tasks);

}  // namespace berth::cli
