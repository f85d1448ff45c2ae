#include "agent/conflict_check.h"

namespace berth::agent {

std::string ReadyConflict::Check(const AgentNode& node, const Reservation&) const {
  if (node.info.ReadyForTasks()) return "";
  const Node& n = node.info.node();
  return "node '" + n.id + "' is " +
         std::string(n.state != NodeState::kReady ? ToString(n.state)
                                                  : ToString(n.availability));
}

std::string ResourcesConflict::Check(const AgentNode& node, const Reservation& r) const {
  const NodeInfo& info = node.info;
  if (info.available_milli_cpu() < 0) return "insufficient cpu";
  if (info.available_memory_bytes() < 0) return "insufficient memory";
  for (const NodeGenericResource& g : info.available_generic())
    if (!g.named && g.count < 0) return "insufficient " + g.kind;
  for (const GenericRequest& request : r.spec->reservations.generic) {
    const NodeGenericResource* kind = nullptr;
    for (const NodeGenericResource& g : info.node().resources.generic)
      if (g.kind == request.kind) kind = &g;
    if (kind == nullptr) return "no " + request.kind + " on the node";
    if (!kind->named) continue;  // discrete counts were checked above
    int64_t names = 0;
    for (const GenericClaim& claim : r.claims) names += claim.kind == request.kind;
    if (names < request.count) return "insufficient " + request.kind;
  }
  return "";
}

std::string PortsConflict::Check(const AgentNode& node, const Reservation& r) const {
  for (const PortSpec& port : r.spec->ports)
    if (port.OccupiesHostPort() && node.info.PortUses(port.Key()) > 1)
      return "host port " + std::string(ToString(port.protocol)) + "/" +
             std::to_string(port.published) + " already in use";
  return "";
}

}  // namespace berth::agent
