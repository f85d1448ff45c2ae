// The three-phase path of a Pass (pass.h): berthd places through external
// agents (AgentPlacement) instead of the full-view engine.
#include <map>
#include <set>

#include "api/cluster_codec.h"
#include "daemon/pass.h"
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
  for (TaskEntry& e : tasks_) {
    if (!Planned(e) || e.facts.state != TaskState::kPending || !e.runnable()) continue;
    ++summary.pending;
    // Its earlier binding is released after this pass's commit, which would
    // take a new binding of the same id with it: the next pass submits it.
    if (releasing_.contains(e.facts.id)) continue;
    std::shared_ptr<const TaskSpec> spec = SpecOf(e);
    // A pending task with an agent is a global service's, pinned to its node.
    agent::PlacementTask task{e.facts.id, 0, std::move(spec), {}, {}, {}};
    if (!e.facts.agent.empty()) {
      task.pinned_agent = e.facts.agent;
      task.pinned_node = e.facts.node;
    }
    if (task.spec == nullptr || !agents_->Submit(std::move(task))) continue;
    submitted = true;
    static const std::string kWaiting = "waiting for a node from the cluster agents";
    if (e.json.value("message", "") == kWaiting) continue;
    e.json["message"] = kWaiting;
    e.changed = true;
  }
  if (!submitted) return;
  agents_->WaitIdle(agents_->options().decide_within);
  ApplyOutcomes();
  summary.pending -= static_cast<int>(assigned_.size() - assigned_before);
}

void Pass::CheckAgentBindings() {
  StoredBindings stored;
  for (const TaskEntry& e : tasks_) {
    if (!e.bound_on_agent()) continue;
    if (std::shared_ptr<const TaskSpec> spec = SpecOf(e))
      stored[e.facts.agent].push_back({e.facts.id, e.facts.node, spec});
  }
  // A service's task fails and is replaced; a job's waits again, as when
  // its node is removed.
  for (const LostBinding& lost : agents_->CheckBindings(stored)) {
    TaskEntry& e = tasks_[task_index_.at(lost.task_id)];
    const std::string why =
        "agent " + e.facts.agent +
        " no longer held the task (restarted?) and could not bind it again on node '" +
        e.facts.node + "': " + lost.reason;
    if (e.facts.job.empty())
      SetState(e, "failed", why);
    else
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
    if (e == nullptr || !Planned(*e) || e->facts.state != TaskState::kPending) {
      if (outcome.bound) ReleaseAfterCommit(outcome.agent_id, id);
      continue;
    }
    if (outcome.bound) {
      e->json["node"] = outcome.node_id;
      SetState(*e, "assigned", placement::kAssignedMessage);
      e->json["agent"] = outcome.agent_id;
      e->Sync();
      assigned_.push_back(it->second);
      continue;
    }
    const std::string message = "no cluster agent could place the task: " + outcome.reason;
    if (e->json.value("message", "") == message) continue;
    e->json["message"] = message;
    e->changed = true;
  }
}

// Missing replicas of replicated services become pending tasks
// "<service>.<n>", lowest free n first, as the placement document's decoder
// does for the full-view engine (docs/plan.md), counting from ScaleDown's
// counts.
void Pass::GenerateReplicas() {
  // By id, so tasks are made in a fixed order.
  std::map<std::string_view, StoredService*> short_of;
  for (auto& [id, service] : service_by_id_)
    if (service.runnable < service.replicas.value_or(0)) short_of.emplace(id, &service);
  for (auto& [id, service] : short_of) {
    for (uint64_t n = 1; service->runnable < *service->replicas; ++n) {
      api::PlannedTask planned;
      planned.task.id = std::string(id) + "." + std::to_string(n);
      if (Taken(planned.task.id)) continue;
      planned.task.service_id = id;
      planned.task.spec_version = service->spec_version;
      Entry(planned);
      ++service->runnable;
    }
  }
}

// A global service gets a pending task pinned to each node of the agents
// where it may run (AgentPlacement::EligibleNodes) and that has no runnable
// task of the service, named by api::GlobalTaskId as the full-view path
// names those on berthd's own nodes.
void Pass::GenerateGlobalTasks() {
  std::set<std::string, std::less<>> global;
  for (const auto& [id, service] : service_by_id_)
    if (!service.replicas.has_value()) global.insert(id);
  agents_->KeepEligible(global);
  if (global.empty()) return;
  // Nodes, by service. Owned strings: Entry() below may move tasks_.
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> covered;
  for (const TaskEntry& e : tasks_)
    if (global.contains(e.facts.service) && Planned(e) && e.runnable() && !e.facts.node.empty())
      covered[e.facts.service].insert(e.facts.node);
  for (const std::string& id : global) {
    const StoredService& service = service_by_id_.at(id);
    std::shared_ptr<const TaskSpec> spec = SpecOf(id);
    if (spec == nullptr) continue;
    const auto& eligible = agents_->EligibleNodes(id, service.spec_version, *spec);
    for (size_t slot = 0; slot < eligible.size(); ++slot) {
      for (const std::string& node : eligible[slot]) {
        if (covered[id].contains(node)) continue;
        api::PlannedTask planned;
        planned.task.id =
            api::GlobalTaskId(id, node, [&](const std::string& t) { return Taken(t); });
        planned.task.service_id = id;
        planned.task.spec_version = service.spec_version;
        planned.task.node_id = node;
        TaskEntry& e = Entry(planned);
        e.json["agent"] = agents_->agent_id(slot);
        e.Sync();
      }
    }
  }
}

// A service task runs its service's template, a job's task its own copy.
std::shared_ptr<const TaskSpec> Pass::SpecOf(const TaskEntry& e) {
  if (!e.facts.service.empty()) return SpecOf(e.facts.service);
  auto spec = std::make_shared<TaskSpec>();
  if (!api::DecodeTaskSpec(e.json.value("task", Json::object()), "task", spec.get()).ok())
    return nullptr;
  return spec;
}

std::shared_ptr<const TaskSpec> Pass::SpecOf(const std::string& service) {
  if (auto cached = service_specs_.find(service); cached != service_specs_.end())
    return cached->second;
  auto spec = std::make_shared<TaskSpec>();
  if (!api::DecodeTaskSpec(service_by_id_.at(service).json["task"], "task", spec.get()).ok())
    spec = nullptr;
  service_specs_[service] = spec;
  return spec;
}

}  // namespace berth::daemon
