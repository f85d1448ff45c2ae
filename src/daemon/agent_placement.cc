#include "daemon/agent_placement.h"

#include <algorithm>
#include <cstdio>

namespace berth::daemon {

AgentPlacement::AgentPlacement(std::vector<threephase::AgentTransport*> agents, const Clock& clock,
                               AgentPlacementOptions options)
    : agents_(std::move(agents)), clock_(clock), options_(options), check_at_(agents_.size()) {}

AgentPlacement::~AgentPlacement() { Stop(); }

void AgentPlacement::Start(std::function<void()> on_outcome) {
  on_outcome_ = std::move(on_outcome);
  instance_ = std::make_unique<threephase::SchedulerInstance>(
      agents_, options_.scheduler, [this](const threephase::TaskOutcome& o) { Keep(o); });
  instance_->Start();
}

void AgentPlacement::Stop() {
  if (instance_) instance_->Stop();
}

int64_t AgentPlacement::Workers() const {
  int64_t nodes = 0;
  for (const threephase::AgentTransport* agent : agents_) nodes += agent->node_count();
  return nodes;
}

void AgentPlacement::Keep(const threephase::TaskOutcome& outcome) {
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(outcome.task_id);
    if (!outcome.bound) retry_at_[outcome.task_id] = clock_.Now() + options_.retry_after;
    outcomes_[outcome.task_id] = outcome;
  }
  (outcome.bound ? counters_.bound : counters_.failed).fetch_add(1);
  if (on_outcome_) on_outcome_();
}

bool AgentPlacement::Submit(agent::PlacementTask task) {
  {
    std::lock_guard lock(mu_);
    if (in_flight_.contains(task.id) || outcomes_.contains(task.id)) return false;
    if (auto retry = retry_at_.find(task.id); retry != retry_at_.end()) {
      if (clock_.Now() < retry->second) return false;
      retry_at_.erase(retry);
    }
    in_flight_.insert(task.id);
  }
  counters_.submitted.fetch_add(1);
  instance_->Submit(std::move(task));
  return true;
}

bool AgentPlacement::Busy() const {
  std::lock_guard lock(mu_);
  return !in_flight_.empty() || !outcomes_.empty();
}

std::map<std::string, threephase::TaskOutcome> AgentPlacement::Outcomes() const {
  std::lock_guard lock(mu_);
  return outcomes_;
}

void AgentPlacement::Delivered(const std::vector<std::string>& task_ids) {
  std::lock_guard lock(mu_);
  for (const std::string& id : task_ids) outcomes_.erase(id);
}

void AgentPlacement::Release(const std::map<std::string, std::vector<std::string>>& by_agent) {
  for (const auto& [agent_id, task_ids] : by_agent) {
    const std::optional<size_t> slot = SlotOf(agent_id);
    Result<size_t> released = slot
                                  ? agents_[*slot]->Release(task_ids, options_.release_timeout)
                                  : Result<size_t>(Status::NotFound("no agent '" + agent_id + "'"));
    if (released.ok()) {
      counters_.released.fetch_add(*released);
      continue;
    }
    counters_.release_errors.fetch_add(task_ids.size());
    if (slot) check_at_[*slot] = {};  // its bindings are to be checked again
    std::fprintf(stderr, "berthd: releasing %zu tasks on agent %s: %s\n", task_ids.size(),
                 agent_id.c_str(), released.status().message().c_str());
  }
}

std::optional<size_t> AgentPlacement::SlotOf(std::string_view agent_id) const {
  for (size_t slot = 0; slot < agents_.size(); ++slot)
    if (agents_[slot]->agent_id() == agent_id) return slot;
  return std::nullopt;
}

// Agents the scheduler's AgentHealth skips are not asked either, and a
// failed call here counts against them as one of the scheduler's does.
bool AgentPlacement::Available(size_t slot) const {
  return instance_ == nullptr || instance_->health().Available(slot, SteadyNowNs());
}

void AgentPlacement::Failed(size_t slot) {
  if (instance_) instance_->health().Failed(slot, SteadyNowNs());
}

bool AgentPlacement::BindingsDue() const {
  const Timestamp now = clock_.Now();
  return std::any_of(check_at_.begin(), check_at_.end(), [&](auto at) { return at <= now; });
}

std::optional<Timestamp> AgentPlacement::NextDue() {
  const Timestamp now = clock_.Now();
  std::optional<Timestamp> due;
  auto consider = [&](Timestamp at) { due = due ? std::min(*due, at) : at; };
  for (Timestamp at : check_at_) consider(at);
  std::lock_guard lock(mu_);
  // A retry time that has passed is either used by the next Submit of its
  // task or belongs to a task that is not pending any more.
  std::erase_if(retry_at_, [&](const auto& entry) { return entry.second <= now; });
  for (const auto& [id, at] : retry_at_) consider(at);
  return due;
}

std::vector<LostBinding> AgentPlacement::CheckBindings(const StoredBindings& stored) {
  std::vector<LostBinding> lost;
  static const std::vector<StoredBinding> kNone;
  for (size_t slot = 0; slot < agents_.size(); ++slot) {
    const Timestamp now = clock_.Now();
    if (check_at_[slot] > now) continue;
    // An agent that is skipped or does not answer is checked again later.
    check_at_[slot] = now + options_.retry_after;
    if (!Available(slot)) continue;
    const auto it = stored.find(agents_[slot]->agent_id());
    if (CheckAgent(slot, it == stored.end() ? kNone : it->second, &lost))
      check_at_[slot] = now + options_.check_bindings_every;
    else
      Failed(slot);
  }
  return lost;
}

bool AgentPlacement::CheckAgent(size_t slot, const std::vector<StoredBinding>& stored,
                                std::vector<LostBinding>* lost) {
  threephase::AgentTransport& agent = *agents_[slot];
  Result<std::vector<std::string>> bound = agent.Bindings(options_.release_timeout);
  if (!bound.ok()) return false;
  std::set<std::string_view> held, at_agent(bound->begin(), bound->end());
  for (const StoredBinding& b : stored) held.insert(b.task_id);
  std::vector<std::string> stray;
  {
    // Read after the agent answered: a task bound there meanwhile is in
    // flight or has its outcome here.
    std::lock_guard lock(mu_);
    for (const std::string& id : *bound)
      if (!held.contains(id) && !in_flight_.contains(id) && !outcomes_.contains(id))
        stray.push_back(id);
  }
  if (!stray.empty()) {
    Result<size_t> released = agent.Release(stray, options_.release_timeout);
    if (!released.ok()) return false;
    counters_.stray_released.fetch_add(*released);
    std::fprintf(stderr, "berthd: released %zu bindings on agent %s that no stored task holds\n",
                 *released, agent.agent_id().c_str());
  }
  for (const StoredBinding& b : stored) {
    if (at_agent.contains(b.task_id)) continue;
    Result<agent::CommitResponse> rebound =
        agent.Commit({{b.task_id, 0, b.spec, {}, {}, {}}, 0, b.node_id}, options_.release_timeout);
    if (!rebound.ok()) return false;
    if (rebound->outcome == agent::CommitOutcome::kBound) {
      counters_.rebound.fetch_add(1);
      continue;
    }
    counters_.lost.fetch_add(1);
    lost->push_back({b.task_id, rebound->reason});
  }
  return true;
}

const std::vector<std::vector<std::string>>& AgentPlacement::EligibleNodes(
    const std::string& service, uint64_t spec_version, const TaskSpec& spec) {
  Eligible& e = eligible_[service];
  if (e.answered.empty() || e.spec_version != spec_version)
    e = {spec_version, std::vector<char>(agents_.size(), 0),
         std::vector<std::vector<std::string>>(agents_.size())};
  for (size_t slot = 0; slot < agents_.size(); ++slot) {
    if (e.answered[slot] || !Available(slot)) continue;
    Result<std::vector<std::string>> nodes =
        agents_[slot]->Eligible(spec, options_.scheduler.request_timeout);
    if (!nodes.ok()) {
      Failed(slot);
      continue;
    }
    e.nodes[slot] = std::move(*nodes);
    e.answered[slot] = 1;
  }
  return e.nodes;
}

void AgentPlacement::KeepEligible(const std::set<std::string, std::less<>>& services) {
  std::erase_if(eligible_, [&](const auto& entry) { return !services.contains(entry.first); });
}

}  // namespace berth::daemon
