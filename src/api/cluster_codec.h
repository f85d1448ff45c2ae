// Decoders for the cluster objects that every document spells the same way:
// nodes and task templates (the `task` object of a service or one-off task).
//
// Strict, like every Berth decoder: unknown fields and invalid values are
// InvalidArgument errors naming the path (api/json_fields.h). docs/plan.md
// lists the fields, types and defaults. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "api/json_fields.h"
#include "core/node.h"
#include "core/task.h"

namespace berth::api {

// A node: id (required), hostname, role, state, availability, platform,
// resources {cpu, memory, generic}, labels, engine_labels, plugins, address.
// Absent fields keep the Node defaults (worker, ready, active, no platform).
Status DecodeNode(const Json& value, const std::string& path, Node* node);

// The nodes of a nodes document, {"nodes": [node, ...]} (berth-agent's
// --nodes file): each a node as DecodeNode reads it, ids unique.
Result<std::vector<Node>> DecodeNodeList(const Json& doc);

// A task template: resources {cpu, memory, generic counts}, constraints
// (parsed here, so a bad expression is reported with its parse error),
// preferences (each {"spread": D[, "weights": {value: w, "*": w}]},
// {"pack": D} or {"prefer": "<constraint>"}, D one of node.labels.X,
// engine.labels.X, node.id; docs/placement.md), platforms, ports,
// max_replicas_per_node, networks, volume_drivers, log_driver.
// Descriptors are stored with their prefix in lower case.
Status DecodeTaskSpec(const Json& value, const std::string& path, TaskSpec* spec);

}  // namespace berth::api
