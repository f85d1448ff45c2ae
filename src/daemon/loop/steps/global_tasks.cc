#include "daemon/loop/steps/global_tasks.h"

#include <algorithm>

namespace berth::daemon {

void GlobalTasks::OnNodes() {
  const std::set<std::string>& dirty = pass_.DirtyServices();
  std::vector<std::string> added(pass_.changed_nodes());
  std::sort(added.begin(), added.end());
  added.erase(std::unique(added.begin(), added.end()), added.end());
  std::erase_if(added, [&](const std::string& node) { return !pass_.HasNode(node); });
  std::set<std::string, std::less<>> global;
  if (added.empty()) {
    for (const std::string& id : dirty)
      if (auto svc = pass_.FindService(id); svc != pass_.services().end() && !svc->second.replicas)
        global.insert(id);
  } else {
    global = pass_.global_services();
  }
  for (const std::string& id : global) {
    const uint64_t version = pass_.services().at(id).spec_version;
    if (dirty.contains(id)) {
      for (const auto& [node, stored] : pass_.nodes()) CoverNode(id, version, node);
    } else {
      for (const std::string& node : added) CoverNode(id, version, node);
    }
  }
}

TaskEntry* GlobalTasks::CoverNode(const std::string& service, uint64_t spec_version,
                                  const std::string& node) {
  if (pass_.TallyOf(service).covered.contains(node)) return nullptr;
  // berthd's own nodes: none on a drained or not-ready one, as SwarmKit's
  // global orchestrator (a node an agent lists is the agent's to judge).
  if (!pass_.on_agents()) {
    const auto stored = pass_.nodes().find(node);
    if (stored == pass_.nodes().end()) return nullptr;  // removed since its task ended
    const Node& n = stored->second.node;
    if (n.availability == NodeAvailability::kDrain || n.state != NodeState::kReady) return nullptr;
  }
  return &pass_.NewTask(service, spec_version, 0, node);
}

void GlobalTasks::OnAgentNodes(AgentPlacement& agents) {
  const std::set<std::string, std::less<>>& global = pass_.global_services();
  agents.KeepEligible(global);
  if (global.empty()) return;
  // Each service's nodes, by agent id, as far as the agents answered.
  std::map<std::string, std::map<std::string, std::set<std::string>>> offered;
  for (const std::string& id : global) {
    const StoredService& service = pass_.services().at(id);
    std::shared_ptr<const TaskSpec> spec = pass_.SpecOf(id);
    if (spec == nullptr) continue;
    const auto& eligible = agents.EligibleNodes(id, service.spec_version, *spec);
    for (size_t slot = 0; slot < eligible.size(); ++slot) {
      if (agents.EligibleKnown(id, slot))
        offered[id][agents.agent_id(slot)].insert(eligible[slot].begin(), eligible[slot].end());
      for (const std::string& node : eligible[slot]) {
        if (TaskEntry* e = CoverNode(id, service.spec_version, node))
          e->task.agent = agents.agent_id(slot);
      }
    }
  }
  RetireUnoffered(offered);
}

void GlobalTasks::RetireUnoffered(
    const std::map<std::string, std::map<std::string, std::set<std::string>>>& offered) {
  const std::vector<uint32_t> pending(pass_.pending().begin(), pass_.pending().end());
  for (uint32_t position : pending) {
    TaskEntry& e = pass_.task(position);
    const auto service = offered.find(e.task.service);
    if (e.task.agent.empty() || service == offered.end()) continue;
    const auto agent = service->second.find(e.task.agent);
    if (agent == service->second.end() || agent->second.contains(e.task.node)) continue;
    pass_.SetState(e, TaskState::kShutdown,
                   "agent " + e.task.agent + " no longer offers node '" + e.task.node +
                       "' to the service (gone, or no longer eligible)",
                   true);
    ++pass_.summary.stopped;
  }
}

}  // namespace berth::daemon
