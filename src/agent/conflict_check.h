// ConflictCheck: run by a binding pipeline on a locked node after the
// task's reservation was taken (docs/threephase.md, "Commit", step 4). It
// sees the node's current state: bound tasks plus every reservation in
// flight, this one included. Returns "" when the task may bind, else the
// reason for the conflict. Each binding pipeline owns its instances.
#pragma once

#include <string>

#include "agent/nodes_cache.h"

namespace berth::agent {

class ConflictCheck {
 public:
  virtual ~ConflictCheck() = default;
  virtual std::string Check(const AgentNode& node, const Reservation& reservation) const = 0;
};

// Readiness: the node is ready and active. A node can go down (a berth-node
// of the agent stopped heartbeating) or be drained between a sample and
// its commit.
class ReadyConflict final : public ConflictCheck {
 public:
  std::string Check(const AgentNode& node, const Reservation& reservation) const override;
};

// Resources: no free amount may be negative, and a request against named
// generic instances must have got all the names it asked for.
class ResourcesConflict final : public ConflictCheck {
 public:
  std::string Check(const AgentNode& node, const Reservation& reservation) const override;
};

// Host ports: each of the task's host-mode published ports is held once.
class PortsConflict final : public ConflictCheck {
 public:
  std::string Check(const AgentNode& node, const Reservation& reservation) const override;
};

}  // namespace berth::agent
