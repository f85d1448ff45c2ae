#include "daemon/loop/steps/node_lifecycle.h"

#include "constraint/constraint.h"

namespace berth::daemon {

bool NodeLifecycle::LeaveNode(TaskEntry& e, const StoredService& service) {
  const Node& node = pass_.nodes().find(e.task.node)->second.node;
  const std::string& id = e.task.node;
  if (e.task.desired > TaskState::kRunning) {  // abandoned while its node was down
    if (node.state != NodeState::kReady) return false;
    pass_.SetState(e, TaskState::kShutdown,
                   "stopped: node '" + id + "' is back and the task was replaced meanwhile", true);
    return true;
  }
  if (node.availability == NodeAvailability::kDrain) {
    pass_.SetState(e, TaskState::kShutdown, "node '" + id + "' was drained", true);
    return true;
  }
  if (node.state != NodeState::kReady) {
    const Duration grace =
        node.state == NodeState::kDown ? options_.down_grace : options_.unknown_grace;
    const Timestamp since = not_ready_.Since(id, pass_.now());
    if (pass_.now() < since + grace) {
      pass_.CheckAt(pass_.PositionOf(e), since + grace);
      return false;
    }
    Abandon(e, "node '" + id + "' is " + std::string(ToString(node.state)) + " since " +
                   FormatRfc3339(since) + "; replaced elsewhere");
    return true;
  }
  if (e.task.state < TaskState::kAssigned) return false;  // the engine explains a pending one
  for (size_t i = 0; i < service.constraints.size(); ++i)
    if (!constraint::Matches(service.constraints[i], node)) {
      pass_.SetState(
          e, TaskState::kShutdown,
          "node '" + id + "' no longer satisfies constraint '" + service.spec->constraints[i] + "'",
          true);
      return true;
    }
  return false;
}

// Replaced now, stopped once its node is back (it may still run there; the
// node is not reachable to say).
void NodeLifecycle::Abandon(TaskEntry& e, std::string message) {
  e.task.desired = TaskState::kShutdown;
  e.task.message = std::move(message);
  e.task.updated_at = pass_.now();
  pass_.MarkChanged(e);
}

}  // namespace berth::daemon
