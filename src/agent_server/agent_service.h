// AgentService: berth-agent's HTTP face. Serves one agent::Agent (one
// cluster's nodes) on an api::ApiServer, so it shares berthd's bearer-token
// check, body limit and JSON errors (docs/agent.md):
//   GET  /v1/agent    {"id", "nodes", "bound", "conflicts", "samples", "released", "bindings"}
//   POST /v1/sample   a sample request -> {"nodes": [...], "looked_at"}
//   POST /v1/commit   a commit request -> {"outcome": "bound"|"conflict"|"error", "reason"}
//   POST /v1/release  {"tasks": [ids]} -> {"released": n}: those tasks stopped
//   GET  /v1/bindings {"tasks": [ids]}: the tasks bound here
//   POST /v1/eligible {"task": template} -> {"nodes": [ids]}: where a global
//                     service's task may run (Agent::Eligible)
//   GET  /metrics     Prometheus text
// With a node fleet (berth-node machines of its own, agent_server/node_fleet.h),
// commits and releases go through the fleet, which runs what is bound, and
// the fleet adds its own routes (NodeFleet::AddRoutes).
// A commit answers 200 with its outcome, so a conflict is never mistaken
// for a failed request; malformed requests get 400.
// Thread-safe: the agent is, and routes hold no state of their own.
#pragma once

#include "agent/agent.h"
#include "agent_server/node_fleet.h"
#include "api/http_server.h"

namespace berth::agent_server {

// `fleet`: null when the agent's nodes are simulated or from a file.
void AddAgentRoutes(api::ApiServer& server, agent::Agent& agent, NodeFleet* fleet = nullptr);

}  // namespace berth::agent_server
