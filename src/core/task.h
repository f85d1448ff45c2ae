// Task and TaskSpec: a unit of work and what the scheduler must honour for it.
//
// A TaskSpec is shared (std::shared_ptr<const TaskSpec>) by every task of one
// service version, so a million replicas cost one spec. Plain value types.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/node.h"
#include "core/resources.h"
#include "core/status.h"
#include "core/time.h"

namespace berth {

// Lifecycle order matters: comparisons such as `state <= TaskState::kRunning`
// are used throughout, exactly as docs/placement.md ("Nodes and tasks")
// orders the states.
enum class TaskState : uint8_t {
  kNew,
  kPending,
  kAssigned,
  kAccepted,
  kPreparing,
  kStarting,
  kRunning,
  kComplete,
  kShutdown,
  kFailed,
  kRejected,
  kRemove,
  kOrphaned,
};

std::string_view ToString(TaskState state);
Result<TaskState> ParseTaskState(std::string_view text);

enum class Protocol : uint8_t { kTcp, kUdp, kSctp };
std::string_view ToString(Protocol protocol);
Result<Protocol> ParseProtocol(std::string_view text);

struct PortSpec {
  Protocol protocol = Protocol::kTcp;
  uint16_t published = 0;  // 0: no published port
  bool host_mode = false;  // only host-mode published ports occupy a node's port

  // Host-mode published ports take part in the host-port filter.
  bool OccupiesHostPort() const { return host_mode && published != 0; }
  // A dense key for (protocol, port) used by NodeInfo's port index.
  uint32_t Key() const { return (static_cast<uint32_t>(protocol) << 16) | published; }
  friend bool operator==(const PortSpec&, const PortSpec&) = default;
};

// One level of the tree of heaps (docs/placement.md, "Preferences beyond
// SwarmKit"): spread over or pack into the values of a label. With the
// descriptor `node.id` (allowed only as the last preference) it is not a
// level but the order of nodes within a leaf: spread (SwarmKit's order) or
// pack (binpack: the node with the least room left first).
struct PlacementPreference {
  enum class Kind : uint8_t { kSpread, kPack };
  Kind kind = Kind::kSpread;
  std::string descriptor;  // node.labels.<K>, engine.labels.<K> or node.id
  // Spread only. Empty: every value gets an equal share (the spec's split).
  // Otherwise a weight per label value, sorted by value; values not listed,
  // and nodes missing the label, get `other_weight` (the "*" entry, default
  // 0: used only once every weighted branch is full).
  std::vector<std::pair<std::string, uint32_t>> weights;
  uint32_t other_weight = 0;

  static PlacementPreference Spread(std::string descriptor) {
    PlacementPreference p;
    p.descriptor = std::move(descriptor);
    return p;
  }
  static PlacementPreference Pack(std::string descriptor) {
    PlacementPreference p = Spread(std::move(descriptor));
    p.kind = Kind::kPack;
    return p;
  }
  bool IsNodeId() const { return descriptor == "node.id"; }
  friend bool operator==(const PlacementPreference&, const PlacementPreference&) = default;
};

// Affinity between services (docs/placement.md, "Affinity"): run on nodes
// that hold an active task of `service` (anti: that hold none). Hard: a
// filter; soft: an order, like a soft constraint. Naming the task's own
// service with anti gives one task per node.
struct ServiceAffinity {
  std::string service;
  bool anti = false;
  bool soft = false;
  friend bool operator==(const ServiceAffinity&, const ServiceAffinity&) = default;
};

// What the filters and the tree need to know about a task; shared by all tasks
// of one service version.
struct TaskSpec {
  Reservations reservations;
  std::vector<std::string> constraints;            // validated "key==value" expressions
  std::vector<PlacementPreference> preferences;    // spread and pack, highest first
  std::vector<std::string> preferred_constraints;  // soft: order nodes, never exclude
  std::vector<ServiceAffinity> affinities;         // with or without other services' tasks
  std::vector<Platform> platforms;
  std::vector<PortSpec> ports;
  uint64_t max_replicas_per_node = 0;       // 0: no limit
  std::vector<std::string> networks;        // network drivers needed on the node
  std::vector<std::string> volume_drivers;  // volume drivers needed on the node
  std::string log_driver;                   // "" or "none": no log plugin needed
  bool has_limits = false;                  // its template sets limits (cpu, memory or pids)
  bool has_pids_limit = false;              // one of them a pids limit
};

struct Task {
  std::string id;
  std::string service_id;                // empty: a one-off task
  std::optional<uint64_t> spec_version;  // absent: scheduled on its own, never batched
  TaskState state = TaskState::kPending;
  TaskState desired_state = TaskState::kRunning;
  std::string node_id;                   // assigned node; preset on a pending task = preassigned
  Timestamp updated_at;                  // time of the last state change (failure tracking)
  std::shared_ptr<const TaskSpec> spec;  // never null
};

// A job's task can run several times under one id (a retry after a
// failure, a requeue after a rebalance or a lost node), and a berth-node
// never starts a task id twice (its directory keeps the first run's output
// and exit). Each run therefore has its own id on the node: the task's id
// for the first run, "<id>~<attempt>" for later ones ('~' never appears in
// an id). TaskIdOfRun inverts it.
inline std::string RunIdOf(std::string_view task_id, int64_t attempt) {
  std::string id(task_id);
  if (attempt > 0) id += "~" + std::to_string(attempt);
  return id;
}
inline std::string_view TaskIdOfRun(std::string_view run_id) {
  return run_id.substr(0, run_id.find('~'));
}

}  // namespace berth
