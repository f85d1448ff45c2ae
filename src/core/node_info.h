// NodeInfo: a node plus the live accounting an engine keeps for it.
//
// Holds what the filters and the node order read: resources still available
// (node resources minus reservations of tasks tracked on the node), host ports
// in use, and counts of active tasks in total and per service. The owner (the
// placement engine's ClusterState, or an agent's nodes cache) calls Reserve /
// Release when a task starts or stops being tracked, and AddActive /
// RemoveActive when it starts or stops counting for spreading. Not
// thread-safe: the owner serialises access.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/node.h"
#include "core/resources.h"
#include "core/task.h"

namespace berth {

// Dense integer for a service id, assigned by the owner of the NodeInfos.
using ServiceIndex = uint32_t;

class NodeInfo {
 public:
  explicit NodeInfo(Node node);

  const Node& node() const { return node_; }

  // Replaces the node's description. Available resources become the new
  // totals minus what tracked tasks reserve; counts and ports are kept.
  void UpdateNode(Node node);

  // Filter 1 of docs/placement.md ("Filter pipeline"): state ready and
  // availability active.
  bool ReadyForTasks() const {
    return node_.state == NodeState::kReady && node_.availability == NodeAvailability::kActive;
  }

  int64_t available_milli_cpu() const { return available_milli_cpu_; }
  int64_t available_memory_bytes() const { return available_memory_bytes_; }
  const std::vector<NodeGenericResource>& available_generic() const { return available_generic_; }

  // Whether `count` units of `kind` are free: for a discrete kind, count <= the
  // free amount; for a named kind, count <= the number of free names. A kind
  // the node lacks (or whose names are all taken) fails.
  bool HasGeneric(std::string_view kind, int64_t count) const;

  bool PortInUse(uint32_t port_key) const;
  // How many tracked tasks hold the port: more than 1 means a conflict.
  uint32_t PortUses(uint32_t port_key) const;

  uint32_t active_tasks() const { return active_tasks_; }
  uint32_t ActiveTasksOf(ServiceIndex service) const;

  // Takes the spec's reservations and host ports. Named generic instances are
  // taken smallest name first and appended to `claims`. Free amounts may go
  // negative when already-running work exceeds the node (never by scheduling,
  // which filters first).
  void Reserve(const TaskSpec& spec, std::vector<GenericClaim>* claims);
  // Gives back exactly what Reserve took.
  void Release(const TaskSpec& spec, const std::vector<GenericClaim>& claims);

  void AddActive(ServiceIndex service);
  void RemoveActive(ServiceIndex service);

 private:
  NodeGenericResource* FindGeneric(std::string_view kind);
  const NodeGenericResource* FindGeneric(std::string_view kind) const;

  Node node_;
  int64_t available_milli_cpu_ = 0;
  int64_t available_memory_bytes_ = 0;
  std::vector<NodeGenericResource> available_generic_;
  uint32_t active_tasks_ = 0;
  // Sorted by service; a node runs few distinct services, so a flat vector
  // beats a hash map in both memory and lookup time.
  std::vector<std::pair<ServiceIndex, uint32_t>> active_by_service_;
  std::vector<uint32_t> used_ports_;  // sorted PortSpec::Key values; repeats allowed
};

}  // namespace berth
