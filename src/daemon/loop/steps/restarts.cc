#include "daemon/loop/steps/restarts.h"

#include "orchestrator/restart_policy.h"

namespace berth::daemon {

void Restarts::RestartOrKeep(TaskEntry& e, const StoredService& service) {
  const TaskState ended = e.task.state;
  if (e.task.desired != TaskState::kRunning ||
      (ended != TaskState::kComplete && ended != TaskState::kFailed &&
       ended != TaskState::kRejected) ||
      !service.RunsCurrent(e.task.spec_version))
    return;
  if (const TaskEntry* partner = RunningPartner(e)) {
    e.task.desired = TaskState::kShutdown;
    e.task.message += "; not restarted: its slot runs " + partner->task.id;
    pass_.MarkChanged(e);
    return;
  }
  const Timestamp now = pass_.now();
  std::deque<Timestamp>& attempts = attempts_.Of(pass_.HistoryGroupOf(e));
  const orchestrator::RestartDecision decision =
      orchestrator::DecideRestart(service.restart, ended, now, attempts);
  if (!decision.restart) {
    e.task.desired = TaskState::kComplete;
    e.task.message += (e.task.message.empty() ? "" : "; ") + decision.reason;
    pass_.MarkChanged(e);
    return;
  }
  attempts.push_back(now);
  e.task.desired = TaskState::kShutdown;
  pass_.MarkChanged(e);
  // Copies: NewTask may grow the entries, and `e` with them.
  const std::string old_id = e.task.id, service_id = e.task.service, node = e.task.node,
                    agent = e.task.agent;
  const uint64_t slot = e.task.slot;
  TaskEntry* next = slot != 0 ? &pass_.NewTask(service_id, service.spec_version, slot, "")
                              : global_.CoverNode(service_id, service.spec_version, node);
  if (next == nullptr) return;  // its node no longer takes the service's tasks
  if (slot == 0 && pass_.on_agents()) next->task.agent = agent;
  next->task.message = "restarting " + old_id + " (" + std::string(ToString(ended)) + ")";
  if (decision.at <= now) return;
  next->task.state = TaskState::kNew;
  next->task.restart_at = decision.at;
  next->task.message += " after the restart delay, at " + FormatRfc3339(decision.at);
  pass_.Recount(*next);
  pass_.CheckAt(pass_.PositionOf(*next), decision.at);
}

// The other half of a start-first pair in flight that `e` belongs to, if it
// is still meant to run.
const TaskEntry* Restarts::RunningPartner(const TaskEntry& e) {
  const ServiceUpdate* u = rollouts_.Find(e.task.service);
  return u == nullptr ? nullptr : u->RunningPartner(pass_.PositionOf(e), pass_.tasks());
}

}  // namespace berth::daemon
