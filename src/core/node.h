// Node: a machine that can run tasks, as the scheduler sees it.
//
// A plain value type; the engines keep their own live accounting of what is
// reserved on a node in NodeInfo (core/node_info.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/resources.h"
#include "core/status.h"

namespace berth {

enum class NodeRole { kWorker, kManager };
enum class NodeState { kUnknown, kDown, kReady, kDisconnected };
enum class NodeAvailability { kActive, kPause, kDrain };

struct Platform {
  std::string os;
  std::string arch;

  friend bool operator==(const Platform&, const Platform&) = default;
};

// A plugin installed on the node's engine, e.g. {"network", "overlay"}.
struct PluginRef {
  std::string type;  // "network", "volume" or "log" (compared case-insensitively)
  std::string name;

  friend bool operator==(const PluginRef&, const PluginRef&) = default;
};

// Label keys are case-sensitive; std::map keeps iteration deterministic.
using Labels = std::map<std::string, std::string, std::less<>>;

struct Node {
  std::string id;
  std::string hostname;
  NodeRole role = NodeRole::kWorker;
  NodeState state = NodeState::kReady;
  NodeAvailability availability = NodeAvailability::kActive;
  std::optional<Platform> platform;  // absent: the node reported none
  NodeResources resources;
  Labels labels;         // node labels (set by the operator)
  Labels engine_labels;  // labels reported by the node's engine
  std::vector<PluginRef> plugins;
  std::string address;  // IP address as text; may be empty
  // Whether the node's executor holds tasks' resource limits (a berth-node
  // says, from its cgroups); absent: the node says nothing (simulated).
  std::optional<bool> limits_enforced;
  // Whether it also holds pids limits (the pids controller is not always
  // there); absent: as limits_enforced says.
  std::optional<bool> pids_limit_enforced;
};

std::string_view ToString(NodeRole role);
std::string_view ToString(NodeState state);
std::string_view ToString(NodeAvailability availability);
Result<NodeRole> ParseNodeRole(std::string_view text);
Result<NodeState> ParseNodeState(std::string_view text);
Result<NodeAvailability> ParseNodeAvailability(std::string_view text);

}  // namespace berth
