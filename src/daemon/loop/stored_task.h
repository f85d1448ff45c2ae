// StoredTask: a task as berthd's control loop holds it (typed, not JSON),
// and the codec between it and the task's body in the store (docs/api.md,
// "task"). The loop decodes a task once when it reads it from the store and
// encodes it once when a pass writes it; nothing else in the loop touches a
// task's JSON.
//
// Pure functions and a value type; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/json_fields.h"
#include "core/task.h"
#include "core/time.h"
#include "executor/executor.h"

namespace berth::daemon {

using executor::SimulatedRun;

struct StoredTask {
  std::string id;
  std::string service;  // "" for a job's task
  std::string job;      // "" for a service's task
  std::string name;     // a job's task: the name its durations are recorded under
  std::string node;     // "" while not placed
  // The berth-agent that bound it (or, for a pending global task, the agent
  // of its node); "" on the full-view path.
  std::string agent;
  std::string message;  // the last status message
  TaskState state = TaskState::kNew;
  TaskState desired = TaskState::kRunning;
  std::optional<uint64_t> spec_version;  // a service's task: its version
  // A replicated service's task: the slot it fills (1..replicas; `docker
  // service ps`'s "web.1" is slot 1 of web). 0: none (a global service's
  // task is known by its node, a job's by its id).
  uint64_t slot = 0;
  // A restarted task waits until then before the engine sees it (the
  // restart policy's delay); absent: no wait.
  std::optional<Timestamp> restart_at;
  // created_at: when the loop made the task, or its job was submitted.
  std::optional<Timestamp> created_at, updated_at, admitted_at, assigned_at, started_at;
  std::optional<SimulatedRun> run;  // a job's task
  // A job's task: how often it went back to waiting after admission (each
  // run has its own id on the node: RunIdOf), and how many of its job's
  // retries its failures used.
  int64_t attempt = 0, retries = 0;
  bool operator==(const StoredTask&) const = default;
};

// Reads the stored body of task `id` (the store's key), leniently: the
// store holds what berthd wrote, so an absent or unreadable field takes its
// default (state new, desired running) instead of failing the pass. Fields
// berthd no longer writes (the id, which older versions kept in the body
// too; a job task's copy of the job's template) are ignored.
StoredTask DecodeStoredTask(const api::Json& body, std::string_view id);
// The JSON text of `task`: keys in byte order, absent fields left out, and
// so are what the store and the defaults give (the id, desired state
// running): a large service writes its bodies in one commit.
std::string EncodeStoredTask(const StoredTask& task);

}  // namespace berth::daemon
