#include "daemon/loop/steps/agents.h"

#include <memory>
#include <vector>

#include "placement/scheduler.h"

namespace berth::daemon {

void Agents::Place() {
  ApplyOutcomes();
  replicas_.Generate();
  global_.OnAgentNodes(agents_);
  const size_t assigned_before = pass_.assigned_count();
  bool submitted = false;
  // The set changes as tasks are edited below: a copy.
  const std::vector<uint32_t> pending(pass_.pending().begin(), pass_.pending().end());
  for (uint32_t position : pending) {
    TaskEntry& e = pass_.task(position);
    ++pass_.summary.pending;
    // Its earlier binding is released after this pass's commit, which would
    // take a new binding of the same id with it: the next pass submits it.
    if (pass_.Releasing(e.task.id)) continue;
    std::shared_ptr<const TaskSpec> spec = pass_.SpecOf(e);
    // A pending task with an agent is a global service's, pinned to its node.
    agent::PlacementTask task{e.task.id,
                              0,
                              std::move(spec),
                              {},
                              {},
                              {},
                              pass_.SharedProcessOf(e),
                              e.task.attempt > 0 ? RunIdOf(e.task.id, e.task.attempt) : ""};
    if (!e.task.agent.empty()) {
      task.pinned_agent = e.task.agent;
      task.pinned_node = e.task.node;
    }
    if (task.spec == nullptr || !agents_.Submit(std::move(task))) continue;
    submitted = true;
    static const std::string kWaiting = "waiting for a node from the cluster agents";
    if (e.task.message == kWaiting) continue;
    e.task.message = kWaiting;
    pass_.MarkChanged(e);
  }
  if (!submitted) return;
  agents_.WaitIdle(agents_.options().decide_within);
  ApplyOutcomes();
  pass_.summary.pending -= static_cast<int>(pass_.assigned_count() - assigned_before);
}

void Agents::CheckBindings() {
  if (agents_.BindingsDue()) {
    StoredBindings stored;
    for (const TaskEntry& e : pass_.tasks()) {
      if (!e.bound_on_agent()) continue;
      if (std::shared_ptr<const TaskSpec> spec = pass_.SpecOf(e))
        stored[e.task.agent].push_back({e.task.id, e.task.node, spec});
    }
    agents_.CheckBindings(stored);
  }
  std::vector<LostBinding> lost_bindings = agents_.TakeLost();
  // An agent that lost bindings restarted: the nodes it offers global
  // services may have changed.
  if (!lost_bindings.empty()) agents_.ForgetEligible();
  for (const LostBinding& lost : lost_bindings) {
    TaskEntry* entry = pass_.FindTask(lost.task_id);
    if (entry == nullptr) continue;
    TaskEntry& e = *entry;
    if (!e.bound_on_agent() || e.task.agent != lost.agent_id || e.task.node != lost.node_id)
      continue;  // it moved on since the check's pass
    const std::string why =
        "agent " + e.task.agent +
        " no longer held the task (restarted?) and could not bind it again on node '" +
        e.task.node + "': " + lost.reason;
    if (e.task.job.empty()) {
      pass_.SetState(e, TaskState::kFailed, why);
      if (auto svc = pass_.FindService(e.task.service); svc != pass_.services().end())
        restarts_.RestartOrKeep(e, svc->second);
    } else
      pass_.Requeue(e, why + "; waiting again");
    ++pass_.summary.stopped;
  }
}

void Agents::ApplyOutcomes() {
  for (auto& [id, outcome] : agents_.Outcomes()) {
    if (!pass_.Deliver(id)) continue;  // applied earlier in this pass
    TaskEntry* e = pass_.FindTask(id);
    if (e == nullptr || !e->planned() || e->task.state != TaskState::kPending) {
      if (outcome.bound) pass_.ReleaseAfterCommit(outcome.agent_id, id);
      continue;
    }
    if (outcome.bound) {
      e->task.node = outcome.node_id;
      pass_.SetState(*e, TaskState::kAssigned, placement::kAssignedMessage);
      e->task.agent = outcome.agent_id;
      pass_.Assigned(pass_.PositionOf(*e));
      continue;
    }
    const std::string message = std::string(kNoAgentMessage) + ": " + outcome.reason;
    if (e->task.message == message) continue;
    e->task.message = message;
    pass_.MarkChanged(*e);
  }
}

}  // namespace berth::daemon
