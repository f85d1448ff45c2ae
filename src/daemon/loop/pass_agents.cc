// The three-phase path of a Pass (pass.h): berthd places through external
// agents (AgentPlacement) instead of the full-view engine.
#include <map>
#include <set>

#include "api/cluster_codec.h"
#include "daemon/loop/pass.h"
#include "placement/scheduler.h"

namespace berth::daemon {

using api::Json;

// The three-phase path: outcomes that arrived since the last pass are
// applied, missing replicas and global tasks are created, and every pending
// task is handed to the agents' scheduler (which ignores those it already
// has); the decisions that come within `decide_within` are applied before
// the commit.
void Pass::PlaceThroughAgents() {
  ApplyOutcomes();
  GenerateReplicas();
  GenerateGlobalTasks();
  const size_t assigned_before = assigned_.size();
  bool submitted = false;
  // The set changes as tasks are edited below: a copy.
  const std::vector<uint32_t> pending(state_.pending().begin(), state_.pending().end());
  for (uint32_t position : pending) {
    TaskEntry& e = tasks_[position];
    ++summary.pending;
    // Its earlier binding is released after this pass's commit, which would
    // take a new binding of the same id with it: the next pass submits it.
    if (releasing_.contains(e.task.id)) continue;
    std::shared_ptr<const TaskSpec> spec = SpecOf(e);
    // A pending task with an agent is a global service's, pinned to its node.
    agent::PlacementTask task{e.task.id, 0, std::move(spec), {}, {}, {}};
    if (!e.task.agent.empty()) {
      task.pinned_agent = e.task.agent;
      task.pinned_node = e.task.node;
    }
    if (task.spec == nullptr || !agents_->Submit(std::move(task))) continue;
    submitted = true;
    static const std::string kWaiting = "waiting for a node from the cluster agents";
    if (e.task.message == kWaiting) continue;
    e.task.message = kWaiting;
    MarkChanged(e);
  }
  if (!submitted) return;
  agents_->WaitIdle(agents_->options().decide_within);
  ApplyOutcomes();
  summary.pending -= static_cast<int>(assigned_.size() - assigned_before);
}

// Due checks get the stored bindings (every task's: a check is rare), and
// the lost bindings earlier checks found are applied to the tasks still
// bound there: a service's task fails and is replaced; a job's waits again,
// as when its node is removed.
void Pass::CheckAgentBindings() {
  if (agents_->BindingsDue()) {
    StoredBindings stored;
    for (const TaskEntry& e : tasks_) {
      if (!e.bound_on_agent()) continue;
      if (std::shared_ptr<const TaskSpec> spec = SpecOf(e))
        stored[e.task.agent].push_back({e.task.id, e.task.node, spec});
    }
    agents_->CheckBindings(stored);
  }
  std::vector<LostBinding> lost_bindings = agents_->TakeLost();
  // An agent that lost bindings restarted: the nodes it offers global
  // services may have changed.
  if (!lost_bindings.empty()) agents_->ForgetEligible();
  for (const LostBinding& lost : lost_bindings) {
    const auto it = task_index_.find(lost.task_id);
    if (it == task_index_.end()) continue;
    TaskEntry& e = tasks_[it->second];
    if (!e.bound_on_agent() || e.task.agent != lost.agent_id || e.task.node != lost.node_id)
      continue;  // it moved on since the check's pass
    const std::string why =
        "agent " + e.task.agent +
        " no longer held the task (restarted?) and could not bind it again on node '" +
        e.task.node + "': " + lost.reason;
    if (e.task.job.empty()) {
      SetState(e, TaskState::kFailed, why);
      if (auto svc = service_by_id_.find(e.task.service); svc != service_by_id_.end())
        RestartOrKeep(e, svc->second);
    } else
      Requeue(e, why + "; waiting again");
    ++summary.stopped;
  }
}

// A bound task becomes assigned to the agent's node, unless it stopped
// meanwhile (then the binding is given back); a failed one keeps pending with
// the last attempt's reason.
void Pass::ApplyOutcomes() {
  for (auto& [id, outcome] : agents_->Outcomes()) {
    if (!delivered_.insert(id).second) continue;  // applied earlier in this pass
    auto it = task_index_.find(id);
    TaskEntry* e = it == task_index_.end() ? nullptr : &tasks_[it->second];
    if (e == nullptr || !e->planned() || e->task.state != TaskState::kPending) {
      if (outcome.bound) ReleaseAfterCommit(outcome.agent_id, id);
      continue;
    }
    if (outcome.bound) {
      e->task.node = outcome.node_id;
      SetState(*e, TaskState::kAssigned, placement::kAssignedMessage);
      e->task.agent = outcome.agent_id;
      assigned_.push_back(it->second);
      continue;
    }
    const std::string message = "no cluster agent could place the task: " + outcome.reason;
    if (e->task.message == message) continue;
    e->task.message = message;
    MarkChanged(*e);
  }
}

// A global service gets a pending task pinned to each node of the agents
// where it may run (AgentPlacement::EligibleNodes) and that has no runnable
// task of the service, named by orchestrator::GlobalTaskId as the full-view path
// names those on berthd's own nodes.
void Pass::GenerateGlobalTasks() {
  std::set<std::string, std::less<>> global = GlobalServices();
  agents_->KeepEligible(global);
  if (global.empty()) return;
  // Each service's nodes, by agent id, as far as the agents answered.
  std::map<std::string, std::map<std::string, std::set<std::string>>> offered;
  for (const std::string& id : global) {
    const StoredService& service = service_by_id_.at(id);
    std::shared_ptr<const TaskSpec> spec = SpecOf(id);
    if (spec == nullptr) continue;
    const auto& eligible = agents_->EligibleNodes(id, service.spec_version, *spec);
    for (size_t slot = 0; slot < eligible.size(); ++slot) {
      if (agents_->EligibleKnown(id, slot))
        offered[id][agents_->agent_id(slot)].insert(eligible[slot].begin(), eligible[slot].end());
      for (const std::string& node : eligible[slot]) {
        if (TaskEntry* e = CoverNode(id, service.spec_version, node))
          e->task.agent = agents_->agent_id(slot);
      }
    }
  }
  RetireUnofferedGlobalTasks(offered);
}

// A pending global task whose agent answered and no longer offers its node
// (the agent restarted without it, or the node no longer qualifies) is
// retired: it could never be placed there.
void Pass::RetireUnofferedGlobalTasks(
    const std::map<std::string, std::map<std::string, std::set<std::string>>>& offered) {
  const std::vector<uint32_t> pending(state_.pending().begin(), state_.pending().end());
  for (uint32_t position : pending) {
    TaskEntry& e = tasks_[position];
    const auto service = offered.find(e.task.service);
    if (e.task.agent.empty() || service == offered.end()) continue;
    const auto agent = service->second.find(e.task.agent);
    if (agent == service->second.end() || agent->second.contains(e.task.node)) continue;
    SetState(e, TaskState::kShutdown,
             "agent " + e.task.agent + " no longer offers node '" + e.task.node +
                 "' to the service (gone, or no longer eligible)",
             true);
    ++summary.stopped;
  }
}

// A service's task runs its service's template, a job's task its job's
// (both decoded once, when the store's change was read).
// A task of an older version still running (a rolling update has not
// reached it) holds what its own template reserves: the previous one, which
// is the template of every older version in a rollout of one step.
std::shared_ptr<const TaskSpec> Pass::SpecOf(const TaskEntry& e) const {
  if (!e.task.service.empty()) {
    const auto it = service_by_id_.find(e.task.service);
    if (it == service_by_id_.end()) return nullptr;
    const StoredService& s = it->second;
    if (s.RunsPrevious(e.task.spec_version)) return s.previous_spec;
    return s.spec;
  }
  const auto job = job_by_id_.find(e.task.job);
  return job == job_by_id_.end() ? nullptr : job->second.spec;
}

std::shared_ptr<const TaskSpec> Pass::SpecOf(const std::string& service) const {
  const auto it = service_by_id_.find(service);
  return it == service_by_id_.end() ? nullptr : it->second.spec;
}

}  // namespace berth::daemon
