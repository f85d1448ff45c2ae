#include "daemon/loop/steps/rebalance.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "daemon/registry/service_registry.h"

namespace berth::daemon {

using api::Json;

void Rebalance::Candidate(TaskEntry& e, const std::string& service_id,
                          const StoredService& service) {
  if (e.task.state < TaskState::kAssigned || e.task.desired > TaskState::kRunning) return;
  ServiceUpdate& u = updates_.RolloutOf(service_id, service);
  if (u.active() && !u.movers_chosen) u.candidates.insert(pass_.PositionOf(e));
}

// Of a rebalance's candidates, each node gives up as many as it holds beyond
// the engine's target (FullView::RebalanceMoves), highest slot first; the
// others stay. The replacements go where the target has room (StartBatch).
// Without the full view (agents place the tasks) nothing moves.
void Rebalance::ChooseMovers(const std::string& service_id, const StoredService& service,
                             ServiceUpdate& u, const FullView* engine) {
  u.movers_chosen = true;
  std::vector<uint32_t> candidates(u.candidates.begin(), u.candidates.end());
  u.candidates.clear();
  if (engine == nullptr) {
    u.message = "rebalance skipped: with agents, the agents choose the nodes";
    return;
  }
  if (!service.spec || !service.replicas) return;
  FullView::Moves moves = engine->RebalanceMoves(service_id, service.spec, service.spec_version,
                                                 *service.replicas, pass_.now());
  std::map<std::string, uint32_t>& excess = moves.from;
  for (const auto& [next, old] : u.in_flight)  // movers already on their way
    if (old != ServiceUpdate::kNone)
      if (auto it = excess.find(pass_.task(old).task.node); it != excess.end() && it->second > 0)
        --it->second;
  u.room = std::move(moves.to);
  std::sort(candidates.begin(), candidates.end(), [&](uint32_t a, uint32_t b) {
    const StoredTask &x = pass_.task(a).task, &y = pass_.task(b).task;
    return std::tie(x.node, y.slot) < std::tie(y.node, x.slot);
  });
  for (uint32_t p : candidates) {
    const auto it = excess.find(pass_.task(p).task.node);
    if (it == excess.end() || it->second == 0) continue;
    --it->second;
    u.outdated.insert(p);
  }
}

void Rebalance::BeforeRollouts() {
  for (auto& [id, u] : rollouts_) {
    const auto svc = pass_.FindService(id);
    if (svc == pass_.services().end() || !svc->second.rebalancing || !u.active() ||
        u.movers_chosen || u.spec_version != svc->second.spec_version)
      continue;
    // A replacement already in flight (a full visit rebuilt the list) is
    // paired with its mover first, so that scale-down keeps both.
    u.PairInFlight(u.candidates, pass_.tasks());
    if (pass_.on_agents()) ChooseMovers(id, svc->second, u, nullptr);
  }
}

void Rebalance::ChooseAllMovers(const FullView& engine) {
  for (auto& [id, u] : rollouts_) {
    const auto svc = pass_.FindService(id);
    if (svc == pass_.services().end() || !svc->second.rebalancing || !u.active() ||
        u.movers_chosen || u.spec_version != svc->second.spec_version)
      continue;
    ChooseMovers(id, svc->second, u, &engine);
    // The next pass starts the rollout: due at once, and the status is
    // stored now so that the loop does not call the state settled before.
    updates_.QueueStatus(id, u);
    pass_.summary.DueAt(pass_.now());
  }
}

void Rebalance::OnJoin(const FullView& engine, bool nodes_joined) {
  if (nodes_joined)
    for (const auto& [id, service] : pass_.services())
      if (service.rebalance_on_join && service.replicas) rollouts_.rebalance_due().insert(id);
  for (auto it = rollouts_.rebalance_due().begin(); it != rollouts_.rebalance_due().end();) {
    const auto svc = pass_.FindService(*it);
    if (svc == pass_.services().end() || !svc->second.rebalance_on_join || !svc->second.replicas ||
        !svc->second.spec) {
      it = rollouts_.rebalance_due().erase(it);
      continue;
    }
    const StoredService& service = svc->second;
    ServiceRegistry::LastRollout last;
    if (const ServiceUpdate* u = rollouts_.Find(*it))
      last = {u->spec_version, u->state, u->message, u->StartFirstPairs(pass_.tasks())};
    if (!ServiceRegistry::WhyRebalanceWaits(*it, service.spec_version, service.rebalancing, last)
             .empty()) {
      ++it;
      continue;
    }
    if (!engine
             .RebalanceMoves(svc->first, service.spec, service.spec_version, *service.replicas,
                             pass_.now())
             .from.empty()) {
      store::Write w = store::Write::Put(
          "service", svc->first, ServiceRegistry::Rebalanced(Json::parse(service.body)).dump());
      w.IfRevision(service.revision);
      pass_.WriteService(std::move(w));
    }
    it = rollouts_.rebalance_due().erase(it);
  }
}

}  // namespace berth::daemon
