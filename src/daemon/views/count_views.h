// The API's answers built from the control loop's counts (loop/counts.h)
// instead of the tasks: a node's use, a service's replica counts, and the
// dashboard's snapshot (docs/api.md, "Snapshot"). Each costs the nodes,
// services and jobs it shows, never the number of tasks.
//
// Pure functions of an immutable CountsSnapshot; safe from any thread.
#pragma once

#include <string>

#include "api/json_fields.h"
#include "daemon/loop/counts.h"

namespace berth::daemon {

// {"tasks", "allocated": {"cpu", "memory"}, "free": {"cpu", "memory"}}:
// what the node's placed tasks that hold their reservations reserve, and
// what is left of its resources. CPUs as "<milli>m", memory in bytes.
api::Json NodeUseJson(const NodeRow& node);

// Adds NodeUseJson's fields to each node of `nodes` (GET /v1/nodes's list)
// that the snapshot has.
void AddNodeUse(const CountsSnapshot& snapshot, api::Json& nodes);

// {"running", "desired", "pending", "states": {state: n}}: `running` are
// the tasks of the current template that run and are meant to; `desired`
// the replicas (a global service: the tasks that fill a node's slot).
api::Json ServiceTasksJson(const OwnerRow& service);
// Adds ServiceTasksJson as "tasks" to each service of `services` (GET
// /v1/services's list) that the snapshot has.
void AddServiceTasks(const CountsSnapshot& snapshot, api::Json& services);

// The whole snapshot as JSON text: {"revision", "tasks": {state: n},
// "pending_reasons": {reason: n}, "nodes": [...], "services": [...],
// "jobs": [...], "admission"?, "leader"?}, nodes, services and jobs each
// in id order (docs/api.md, "Snapshot"). `leader`: null without etcd.
std::string SnapshotText(const CountsSnapshot& snapshot, const api::Json& leader);

}  // namespace berth::daemon
