#include "daemon/agent_placement.h"

#include <cstdio>

namespace berth::daemon {

AgentPlacement::AgentPlacement(std::vector<threephase::AgentTransport*> agents,
                               AgentPlacementOptions options)
    : agents_(std::move(agents)), options_(options) {}

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
    if (!outcome.bound)
      retry_at_[outcome.task_id] = std::chrono::steady_clock::now() + options_.retry_after;
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
      if (std::chrono::steady_clock::now() < retry->second) return false;
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
    threephase::AgentTransport* agent = nullptr;
    for (threephase::AgentTransport* a : agents_)
      if (a->agent_id() == agent_id) agent = a;
    Result<size_t> released = agent == nullptr
                                  ? Result<size_t>(Status::NotFound("no agent '" + agent_id + "'"))
                                  : agent->Release(task_ids, options_.release_timeout);
    if (released.ok()) {
      counters_.released.fetch_add(*released);
      continue;
    }
    counters_.release_errors.fetch_add(task_ids.size());
    std::fprintf(stderr, "berthd: releasing %zu tasks on agent %s: %s\n", task_ids.size(),
                 agent_id.c_str(), released.status().message().c_str());
  }
}

}  // namespace berth::daemon
