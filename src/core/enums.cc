// Text names of the core enums, shared by every codec.
#include <array>
#include <string>

#include "core/node.h"
#include "core/task.h"

namespace berth {
namespace {

template <typename Enum, size_t N>
Result<Enum> ParseName(const std::array<std::string_view, N>& names, std::string_view text,
                       std::string_view what) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == text) return static_cast<Enum>(i);
  std::string valid;
  for (size_t i = 0; i < N; ++i) valid += (i ? ", " : "") + std::string(names[i]);
  return Status::InvalidArgument("invalid " + std::string(what) + " '" + std::string(text) +
                                 "' (expected one of " + valid + ")");
}

constexpr std::array<std::string_view, 2> kRoles = {"worker", "manager"};
constexpr std::array<std::string_view, 4> kNodeStates = {"unknown", "down", "ready",
                                                         "disconnected"};
constexpr std::array<std::string_view, 3> kAvailabilities = {"active", "pause", "drain"};
constexpr std::array<std::string_view, 13> kTaskStates = {
    "new",      "pending",  "assigned", "accepted", "preparing", "starting", "running",
    "complete", "shutdown", "failed",   "rejected", "remove",    "orphaned"};
constexpr std::array<std::string_view, 3> kProtocols = {"tcp", "udp", "sctp"};

}  // namespace

std::string_view ToString(NodeRole v) { return kRoles[static_cast<size_t>(v)]; }
std::string_view ToString(NodeState v) { return kNodeStates[static_cast<size_t>(v)]; }
std::string_view ToString(NodeAvailability v) { return kAvailabilities[static_cast<size_t>(v)]; }
std::string_view ToString(TaskState v) { return kTaskStates[static_cast<size_t>(v)]; }
std::string_view ToString(Protocol v) { return kProtocols[static_cast<size_t>(v)]; }

Result<NodeRole> ParseNodeRole(std::string_view t) {
  return ParseName<NodeRole>(kRoles, t, "role");
}
Result<NodeState> ParseNodeState(std::string_view t) {
  return ParseName<NodeState>(kNodeStates, t, "node state");
}
Result<NodeAvailability> ParseNodeAvailability(std::string_view t) {
  return ParseName<NodeAvailability>(kAvailabilities, t, "availability");
}
Result<TaskState> ParseTaskState(std::string_view t) {
  return ParseName<TaskState>(kTaskStates, t, "task state");
}
Result<Protocol> ParseProtocol(std::string_view t) {
  return ParseName<Protocol>(kProtocols, t, "protocol");
}

}  // namespace berth
