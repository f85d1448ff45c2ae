// AgentService: berth-agent's faces. AgentCalls holds the agent's calls,
// each a JSON document in and out (api/agent_codec.h); AddAgentRoutes
// serves them over HTTPS on an api::ApiServer, so they share berthd's
// bearer-token check, body limit and JSON errors, and AgentRpcServer
// (agent_rpc_server.h) over gRPC (docs/agent.md):
//   GET  /v1/agent    {"id", "nodes", "bound", "conflicts", "samples", "released", "bindings",
//                     "fleet", "rpc_port"}
//   POST /v1/sample   a sample request -> {"nodes": [...], "looked_at"}
//   POST /v1/commit   a commit request -> {"outcome": "bound"|"conflict"|"error", "reason"}
//   POST /v1/release  {"tasks": [ids]} -> {"released": n}: those tasks stopped
//   GET  /v1/bindings {"tasks": [ids]}: the tasks bound here
//   POST /v1/eligible {"task": template} -> {"nodes": [ids]}: where a global
//                     service's task may run (Agent::Eligible)
//   GET  /v1/nodes    {"nodes": [...]}: each node with what is bound to it,
//                     as berthd's node list shows it (berthd merges them)
//   GET  /metrics     Prometheus text
// With a node fleet (berth-node machines of its own, agent_server/node_fleet.h),
// commits and releases go through the fleet, which runs what is bound, and
// the fleet adds its own routes (NodeFleet::AddRoutes).
// A commit answers 200 with its outcome, so a conflict is never mistaken
// for a failed request; malformed requests get 400.
// Thread-safe: the agent is, and the calls hold only the epoch fence.
#pragma once

#include <atomic>
#include <string>

#include "agent/agent.h"
#include "agent_server/node_fleet.h"
#include "api/http_server.h"

namespace berth::agent_server {

class AgentCalls {
 public:
  // `fleet`: null when the agent's nodes are simulated or from a file.
  AgentCalls(agent::Agent& agent, NodeFleet* fleet) : agent_(agent), fleet_(fleet) {}

  // `epoch` is the caller's api::kEpochHeader ("" for none). The newest
  // berthd leader epoch seen is kept: a call of an older one comes from a
  // deposed leader, and is refused (Conflict) before it changes anything
  // (docs/ha.md). A call without one (a single berthd, or a scheduler
  // instance) is let through.
  Status AdmitEpoch(const std::string& epoch);

  // Each takes its route's body and answers its route's JSON;
  // InvalidArgument for a malformed body. `budget_cap` bounds a sample's
  // budget (the time its caller still waits).
  Result<api::Json> Sample(const api::Json& body, Duration budget_cap = Duration::max());
  Result<api::Json> Commit(const api::Json& body);
  Result<api::Json> Release(const api::Json& body);
  Result<api::Json> Eligible(const api::Json& body);
  api::Json Bindings() const;
  // Every node: id, hostname, state, availability, resources, labels, and
  // the tasks bound to it with their allocated and free resources.
  api::Json Nodes() const;

  agent::Agent& agent() { return agent_; }
  NodeFleet* fleet() { return fleet_; }

 private:
  agent::Agent& agent_;
  NodeFleet* fleet_;
  std::atomic<int64_t> newest_epoch_{0};
};

// `rpc_port`: the port of the agent's gRPC service, which GET /v1/agent
// names (0: none).
void AddAgentRoutes(api::ApiServer& server, AgentCalls& calls, int rpc_port = 0);

}  // namespace berth::agent_server
