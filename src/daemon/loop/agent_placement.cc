#include "daemon/loop/agent_placement.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace berth::daemon {

AgentPlacement::AgentPlacement(std::vector<threephase::AgentTransport*> agents, const Clock& clock,
                               AgentPlacementOptions options)
    : agents_(std::move(agents)),
      clock_(clock),
      options_(options),
      recheck_(agents_.size(), 0),
      since_check_(agents_.size()),
      check_at_(agents_.size()) {}

AgentPlacement::~AgentPlacement() { Stop(); }

void AgentPlacement::Start(std::function<void()> on_outcome) {
  on_outcome_ = std::move(on_outcome);
  instance_ = std::make_unique<threephase::SchedulerInstance>(
      agents_, options_.scheduler, [this](const threephase::TaskOutcome& o) { Keep(o); });
  instance_->Start();
  caller_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "berth-agents");  // for top -H and perf
    Calls();
  });
}

// Queued calls not made yet are dropped: the next berthd's binding check
// releases what they would have.
void AgentPlacement::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  calls_cv_.notify_all();
  if (caller_.joinable()) caller_.join();
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
    if (releasing_.contains(task.id)) {
      submit_waited_ = true;
      return false;
    }
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
  return !in_flight_.empty() || !outcomes_.empty() || !calls_.empty() || calling_ ||
         !lost_.empty() || !eligible_answers_.empty();
}

bool AgentPlacement::WaitCalls(Duration timeout) {
  std::unique_lock lock(mu_);
  return calls_cv_.wait_for(lock, timeout,
                            [&] { return stopping_ || (calls_.empty() && !calling_); });
}

void AgentPlacement::Queue(Call call) {
  {
    std::lock_guard lock(mu_);
    calls_.push_back(std::move(call));
  }
  calls_cv_.notify_all();
}

void AgentPlacement::Calls() {
  std::unique_lock lock(mu_);
  for (;;) {
    calls_cv_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
    if (stopping_) return;
    Call call = std::move(calls_.front());
    calls_.pop_front();
    calling_ = true;
    lock.unlock();
    Run(call);
    lock.lock();
    calling_ = false;
    calls_cv_.notify_all();  // WaitCalls
  }
}

void AgentPlacement::Answered() {
  if (on_outcome_) on_outcome_();
}

void AgentPlacement::Run(const Call& call) {
  switch (call.kind) {
    case Call::Kind::kRelease:
      RunRelease(call);
      return;
    case Call::Kind::kCheck: {
      const bool answered = Available(call.slot) && RunCheck(call.slot, call.stored);
      if (!answered) Failed(call.slot);
      std::lock_guard lock(mu_);
      since_check_[call.slot].reset();
      if (!answered) recheck_[call.slot] = kRetryCheck;
      break;
    }
    case Call::Kind::kEligible: {
      Result<std::vector<std::string>> nodes =
          agents_[call.slot]->Eligible(*call.spec, options_.scheduler.request_timeout);
      if (!nodes.ok()) Failed(call.slot);
      std::lock_guard lock(mu_);
      eligible_answers_.push_back({call.service, call.spec_version, call.slot,
                                   nodes.ok() ? std::optional(std::move(*nodes)) : std::nullopt});
      break;
    }
  }
  Answered();
}

std::map<std::string, threephase::TaskOutcome> AgentPlacement::Outcomes() const {
  std::lock_guard lock(mu_);
  return outcomes_;
}

void AgentPlacement::Delivered(const std::vector<std::string>& task_ids) {
  std::lock_guard lock(mu_);
  for (const std::string& id : task_ids) outcomes_.erase(id);
  for (auto& moved : since_check_)
    if (moved) moved->insert(task_ids.begin(), task_ids.end());
}

void AgentPlacement::Release(const std::map<std::string, std::vector<std::string>>& by_agent) {
  for (const auto& [agent_id, task_ids] : by_agent) {
    const std::optional<size_t> slot = SlotOf(agent_id);
    if (!slot) {
      counters_.release_errors.fetch_add(task_ids.size());
      std::fprintf(stderr, "berthd: releasing %zu tasks: no agent %s\n", task_ids.size(),
                   agent_id.c_str());
      continue;
    }
    {
      std::lock_guard lock(mu_);
      if (since_check_[*slot]) since_check_[*slot]->insert(task_ids.begin(), task_ids.end());
      for (const std::string& id : task_ids) ++releasing_[id];
    }
    Queue({Call::Kind::kRelease, *slot, task_ids, {}, {}, 0, nullptr});
  }
}

void AgentPlacement::RunRelease(const Call& call) {
  Result<size_t> released = agents_[call.slot]->Release(call.task_ids, options_.release_timeout);
  if (released.ok()) {
    counters_.released.fetch_add(*released);
  } else {
    counters_.release_errors.fetch_add(call.task_ids.size());
    std::fprintf(stderr, "berthd: releasing %zu tasks on agent %s: %s\n", call.task_ids.size(),
                 agents_[call.slot]->agent_id().c_str(), released.status().message().c_str());
  }
  bool waited = false;
  {
    std::lock_guard lock(mu_);
    if (!released.ok()) recheck_[call.slot] = kCheckNow;
    for (const std::string& id : call.task_ids)
      if (auto it = releasing_.find(id); it != releasing_.end() && --it->second == 0)
        releasing_.erase(it);
    waited = std::exchange(submit_waited_, false);
  }
  if (waited) Answered();  // a task waited for this release: a pass submits it
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

bool AgentPlacement::BindingsDue() {
  const Timestamp now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    for (size_t slot = 0; slot < agents_.size(); ++slot) {
      const char recheck = std::exchange(recheck_[slot], 0);
      if (recheck == kCheckNow) check_at_[slot] = {};
      if (recheck == kRetryCheck) check_at_[slot] = now + options_.retry_after;
    }
  }
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

// A due agent is checked again `check_bindings_every` later, or after
// `retry_after` when the check fails (recheck_).
void AgentPlacement::CheckBindings(const StoredBindings& stored) {
  const Timestamp now = clock_.Now();
  for (size_t slot = 0; slot < agents_.size(); ++slot) {
    if (check_at_[slot] > now) continue;
    check_at_[slot] = now + options_.check_bindings_every;
    const auto it = stored.find(agents_[slot]->agent_id());
    {
      std::lock_guard lock(mu_);
      if (since_check_[slot]) continue;  // one check at a time
      since_check_[slot].emplace();
    }
    Queue({Call::Kind::kCheck,
           slot,
           {},
           it == stored.end() ? std::vector<StoredBinding>{} : it->second,
           {},
           0,
           nullptr});
  }
}

std::vector<LostBinding> AgentPlacement::TakeLost() {
  std::lock_guard lock(mu_);
  return std::exchange(lost_, {});
}

bool AgentPlacement::RunCheck(size_t slot, const std::vector<StoredBinding>& stored) {
  threephase::AgentTransport& agent = *agents_[slot];
  Result<std::vector<std::string>> bound = agent.Bindings(options_.release_timeout);
  if (!bound.ok()) return false;
  std::set<std::string_view> held, at_agent(bound->begin(), bound->end());
  for (const StoredBinding& b : stored) held.insert(b.task_id);
  std::vector<std::string> stray;
  std::set<std::string, std::less<>> moved;  // delivered or released since the check's pass
  {
    // Read after the agent answered: a task bound there meanwhile is in
    // flight, has its outcome here, or was delivered since.
    std::lock_guard lock(mu_);
    if (since_check_[slot]) moved = *since_check_[slot];
    for (const std::string& id : *bound)
      if (!held.contains(id) && !in_flight_.contains(id) && !outcomes_.contains(id) &&
          !moved.contains(id))
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
    {
      std::lock_guard lock(mu_);
      if (since_check_[slot] && since_check_[slot]->contains(b.task_id)) continue;
    }
    Result<agent::CommitResponse> rebound =
        agent.Commit({{b.task_id, 0, b.spec, {}, {}, {}}, 0, b.node_id}, options_.release_timeout);
    if (!rebound.ok()) return false;
    if (rebound->outcome == agent::CommitOutcome::kBound) {
      counters_.rebound.fetch_add(1);
      continue;
    }
    counters_.lost.fetch_add(1);
    std::lock_guard lock(mu_);
    lost_.push_back({b.task_id, agent.agent_id(), b.node_id, rebound->reason});
  }
  return true;
}

const std::vector<std::vector<std::string>>& AgentPlacement::EligibleNodes(
    const std::string& service, uint64_t spec_version, const TaskSpec& spec) {
  Eligible& e = eligible_[service];
  if (e.answered.empty() || e.spec_version != spec_version)
    e = {spec_version, std::vector<char>(agents_.size(), 0), std::vector<char>(agents_.size(), 0),
         std::vector<std::vector<std::string>>(agents_.size())};
  std::vector<EligibleAnswer> answers;
  {
    std::lock_guard lock(mu_);
    std::erase_if(eligible_answers_, [&](EligibleAnswer& a) {
      if (a.service != service) return false;
      answers.push_back(std::move(a));
      return true;
    });
  }
  for (EligibleAnswer& a : answers) {
    if (a.spec_version != e.spec_version) continue;
    e.asked[a.slot] = 0;
    if (!a.nodes) continue;  // asked again below, once the agent is available
    e.nodes[a.slot] = std::move(*a.nodes);
    e.answered[a.slot] = 1;
  }
  for (size_t slot = 0; slot < agents_.size(); ++slot) {
    if (e.answered[slot] || e.asked[slot] || !Available(slot)) continue;
    e.asked[slot] = 1;
    Queue({Call::Kind::kEligible,
           slot,
           {},
           {},
           service,
           spec_version,
           std::make_shared<const TaskSpec>(spec)});
  }
  return e.nodes;
}

void AgentPlacement::KeepEligible(const std::set<std::string, std::less<>>& services) {
  std::erase_if(eligible_, [&](const auto& entry) { return !services.contains(entry.first); });
  std::lock_guard lock(mu_);
  std::erase_if(eligible_answers_,
                [&](const EligibleAnswer& a) { return !services.contains(a.service); });
}

}  // namespace berth::daemon
