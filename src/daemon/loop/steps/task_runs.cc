#include "daemon/loop/steps/task_runs.h"

#include "orchestrator/orchestrator.h"

namespace berth::daemon {

void TaskRuns::Run() {
  for (uint32_t position : pass_.visit()) {
    TaskEntry& e = pass_.task(position);
    if (!e.live()) continue;
    // A node an agent bound the task to is the agent's, not berthd's.
    const std::string& node = e.task.node;
    const bool on_agent = pass_.on_agents() && !e.task.agent.empty();
    const bool node_gone = !node.empty() && !on_agent && !pass_.HasNode(node);
    if (!e.task.job.empty()) {
      const auto job = pass_.jobs().find(e.task.job);
      jobs_.Run(e, job == pass_.jobs().end() ? nullptr : &job->second, node_gone);
      continue;
    }
    RunServiceTask(e, node_gone);
  }
}

void TaskRuns::RunServiceTask(TaskEntry& e, bool node_gone) {
  const std::string& service = e.task.service;
  const auto none = pass_.services().end();
  auto svc = service.empty() ? none : pass_.FindService(service);
  // A task of an earlier service of the same name (removed, then created
  // again) is not the new one's.
  if (svc != none && orchestrator::SerialOf(e.task.id) < svc->second.incarnation) svc = none;
  const bool service_gone = !service.empty() && svc == none;
  pass_.SetInPlan(e, !service_gone && !node_gone);
  if (pass_.summary.visited_all && svc != none) updates_.Young(e, svc->first, svc->second);
  if (e.terminal()) {
    // A removed service's tasks go with it, as Docker's do.
    if (service_gone && !e.pruned) pass_.Prune(e);
    if (!service_gone) restarts_.RestartOrKeep(e, svc->second);
    return;
  }
  // A rebalance's candidates run the current template: they go on as any
  // task does below until one is chosen to move.
  if (!service_gone && svc->second.rebalancing &&
      e.task.spec_version.value_or(0) < svc->second.spec_version)
    rebalance_.Candidate(e, svc->first, svc->second);
  const std::string& node = e.task.node;
  const bool on_agent = pass_.on_agents() && !e.task.agent.empty();
  if (service_gone) {
    pass_.SetState(e, TaskState::kShutdown, "service '" + service + "' was removed", true);
    ++pass_.summary.stopped;
  } else if (node_gone) {
    pass_.SetState(e, TaskState::kOrphaned, "node '" + node + "' was removed");
    ++pass_.summary.stopped;
  } else if (svc != none && !svc->second.RunsCurrent(e.task.spec_version)) {
    updates_.Outdated(e, svc->first, svc->second);
  } else if (!on_agent && !node.empty() && nodes_.LeaveNode(e, svc->second)) {
    ++pass_.summary.stopped;
  } else if (e.task.state == TaskState::kNew && e.task.restart_at) {
    if (pass_.now() < *e.task.restart_at) {
      pass_.CheckAt(pass_.PositionOf(e), *e.task.restart_at);
      return;
    }
    e.task.restart_at.reset();
    pass_.SetState(e, TaskState::kPending, "");
  } else if (e.task.state == TaskState::kAssigned) {
    pass_.Start(e, svc);
  } else if (e.task.state == TaskState::kRunning && svc != none) {
    if (pass_.Finish(e, svc) >= 0) restarts_.RestartOrKeep(e, svc->second);
  }
}

}  // namespace berth::daemon
