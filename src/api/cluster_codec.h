// Decoders for the cluster objects that every document spells the same way:
// nodes and task templates (the `task` object of a service or one-off task).
//
// Strict, like every Berth decoder: unknown fields and invalid values are
// InvalidArgument errors naming the path (api/json_fields.h). docs/plan.md
// lists the fields, types and defaults. Pure functions.
#pragma once

#include <cstdint>
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

// How node views (berthd's GET /v1/nodes, berth-agent's) spell resources:
// {"cpu": "<milli>m", "memory": bytes}.
Json ResourcesJson(int64_t milli_cpu, int64_t memory_bytes);
// A node's use in those views: {"tasks": N, "allocated": resources,
// "free": resources}, for a node of `node` resources whose `tasks` reserve
// `milli_cpu` and `memory_bytes`.
Json NodeUseOf(int64_t tasks, int64_t milli_cpu, int64_t memory_bytes, const NodeResources& node);

// A task template: resources {cpu, memory, generic counts}, constraints
// (parsed here, so a bad expression is reported with its parse error),
// preferences (each {"spread": D[, "weights": {value: w, "*": w}]},
// {"pack": D} or {"prefer": "<constraint>"}, D one of node.labels.X,
// engine.labels.X, node.id; docs/placement.md), platforms, ports,
// max_replicas_per_node, networks, volume_drivers, log_driver.
// Descriptors are stored with their prefix in lower case.
Status DecodeTaskSpec(const Json& value, const std::string& path, TaskSpec* spec);

// berthd's rule for the ports of the templates it runs (a service's or a
// job's `task`, docs/api.md): every port is in host mode. A port in ingress
// mode, which a port without "mode" is in, is Docker's routing mesh:
// published on every node and routed to the tasks. Berth has no routing
// mesh, so nothing would listen on it; it is refused with the reason and
// the fix ("mode": "host", which books the published port on the node a
// task runs on). `task` is a template DecodeTaskSpec accepted, at `path`.
// `berth plan` documents, dry runs of SwarmKit's placement, keep taking
// ingress ports (they book no node port there).
Status RefuseIngressPorts(const Json& task, const std::string& path);

}  // namespace berth::api
