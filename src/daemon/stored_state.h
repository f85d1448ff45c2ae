// StoredState: what berthd's control loop knows of the store between passes
// (reconciler.h): every node, service, task, job and recorded duration,
// parsed once and then kept up to date from the store's changes
// (store::WatchedStore), so a pass parses what changed instead of the whole
// cluster. A pass edits tasks and durations in place and marks them
// `changed`; it commits them with WatchedStore::CommitOwn, so they do not
// come back as changes, and Committed records their new revision. When a
// pass fails, its edits are not in the store: Invalidate, and the next
// Refresh reads everything again.
//
// Not thread-safe: the control loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "core/task.h"
#include "daemon/stored_task.h"
#include "orchestrator/orchestrator.h"
#include "store/watched_store.h"

namespace berth::daemon {

// A stored task, with what the loop keeps about it between passes.
struct TaskEntry {
  StoredTask task;
  int64_t revision = 0;  // 0: created by this pass
  bool changed = false;
  bool in_plan = true;  // handed to the placement engine
  bool pruned = false;  // ended and beyond the history limit: deleted by this pass
  // The full-view engine's record of the task (FullView): its index there,
  // valid while engine_generation is the engine's; kNotInEngine when the
  // engine has none (never had, or forgot it).
  static constexpr uint32_t kNotInEngine = UINT32_MAX;
  uint32_t engine_index = kNotInEngine;
  uint64_t engine_generation = 0;

  bool terminal() const { return task.state > TaskState::kRunning; }
  // Fills one of its service's slots: not finished and still meant to run.
  bool runnable() const { return orchestrator::Runnable(task.state, task.desired); }
  // Holds a binding on its agent (the agent's capacity).
  bool bound_on_agent() const {
    return !task.agent.empty() && task.state >= TaskState::kAssigned && !terminal();
  }
};

struct Recorded {  // durations recorded for one task name
  int64_t count = 0, total_ms = 0, revision = 0;
  bool changed = false;
};

// A service and what a pass's scans read of it, decoded once.
struct StoredService {
  api::Json json;
  std::optional<uint64_t> replicas;  // replicated services only
  uint64_t spec_version = 0;
  std::shared_ptr<const TaskSpec> spec;  // its task template; null if it does not decode
  std::optional<SimulatedRun> run;       // the simulated executor ends its tasks
  uint64_t runnable = 0;                 // a pass's count of its runnable tasks (scratch)
};

struct StoredJob {
  api::Json json;
  int64_t revision = 0;  // admission takes jobs in this (arrival) order
  bool killed = false;
  // Its tasks' template (the job's "task"); null if it does not decode.
  std::shared_ptr<const TaskSpec> spec;
};

class StoredState {
 public:
  // Brings the state up to date: everything on the first call and after
  // Invalidate, the store's changes since the last call otherwise.
  Status Refresh(store::WatchedStore& store);
  void Invalidate() { loaded_ = false; }
  // The pass's writes were committed at `revision`: changed entries take it,
  // pruned ones are forgotten.
  void Committed(int64_t revision);

  std::map<std::string, api::Json, std::less<>> nodes;  // by id
  // Grows with every change to `nodes` (and with every Load).
  uint64_t nodes_generation = 0;
  // Whether `id` is a stored node: a hash lookup, since a pass asks it for
  // every task.
  bool HasNode(const std::string& id) const { return node_ids_.contains(id); }
  // W of fair-share admission: the slots of the ready, active nodes.
  int64_t Workers();
  // By id; a pass looks a service up for each task, so a hash map.
  std::unordered_map<std::string, StoredService> services;
  std::vector<TaskEntry> tasks;
  std::unordered_map<std::string, size_t> task_index;  // id -> tasks[i]
  std::map<std::string, StoredJob, std::less<>> jobs;
  std::map<std::string, Recorded, std::less<>> durations;  // by task name

 private:
  Status Load(store::WatchedStore& store);
  Status Apply(const store::Change& change);
  void PutTask(const std::string& id, const api::Json& body, int64_t revision);
  // Removes tasks[i], moving the last entry into its place.
  void EraseTask(size_t i);

  bool loaded_ = false;
  std::unordered_set<std::string> node_ids_;  // the keys of `nodes`
  uint64_t workers_generation_ = 0;           // of nodes_generation workers_ was counted at
  int64_t workers_ = 0;
};

}  // namespace berth::daemon
