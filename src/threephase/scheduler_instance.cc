#include "threephase/scheduler_instance.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

namespace berth::threephase {

SchedulerInstance::SchedulerInstance(std::vector<AgentTransport*> agents, SchedulerOptions options,
                                     std::function<void(const TaskOutcome&)> on_outcome,
                                     std::unique_ptr<TaskOrder> order)
    : agents_(std::move(agents)),
      options_(options),
      health_(agents_.size(), options.health),
      on_outcome_(std::move(on_outcome)),
      queue_(order ? std::move(order) : std::make_unique<PriorityThenArrival>()) {
  for (size_t i = 0; i < agents_.size(); ++i) slot_by_agent_id_.emplace(agents_[i]->agent_id(), i);
}

SchedulerInstance::~SchedulerInstance() { Stop(); }

size_t SchedulerInstance::AgentsPerAttempt(int cluster_percent, size_t agents) {
  // ceil(Cp / 100 * clusters), at least 1, at most every agent.
  const int64_t percent = std::clamp(cluster_percent, 0, 100);
  const int64_t wanted = (percent * static_cast<int64_t>(agents) + 99) / 100;
  return static_cast<size_t>(
      std::clamp<int64_t>(wanted, 1, std::max<int64_t>(1, static_cast<int64_t>(agents))));
}

void SchedulerInstance::Start() {
  for (int i = 0; i < std::max(1, options_.samplers); ++i)
    threads_.emplace_back([this, i] {
      pthread_setname_np(pthread_self(), "berth-sample");  // for top -H and perf
      SamplerLoop(options_.seed * 1'000'003 + static_cast<uint64_t>(i));
    });
  for (int i = 0; i < std::max(1, options_.decision_pipelines); ++i)
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "berth-decide");
      DecisionLoop();
    });
}

void SchedulerInstance::Stop() {
  queue_.Close();
  {
    std::lock_guard lock(decide_mu_);
    stopping_ = true;
  }
  decide_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void SchedulerInstance::Submit(agent::PlacementTask task) {
  {
    std::lock_guard lock(idle_mu_);
    ++outstanding_;
  }
  counters_.submitted.fetch_add(1, std::memory_order_relaxed);
  QueuedTask queued;
  queued.task = std::move(task);
  queued.arrival = next_arrival_.fetch_add(1, std::memory_order_relaxed);
  queued.submitted_ns = SteadyNowNs();
  queue_.Push(std::move(queued));
}

bool SchedulerInstance::WaitIdle(Duration timeout) {
  std::unique_lock lock(idle_mu_);
  return idle_.wait_for(lock, timeout, [&] { return outstanding_ == 0; });
}

// Phase 1: 2-smart sampling of a random subset of the agents, for up to
// `sample_batch` queued tasks at once: each agent is asked once for every
// task of the batch that chose it (AgentTransport::SampleMany).
void SchedulerInstance::SamplerLoop(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> chosen;
  chosen.reserve(agents_.size());
  std::vector<QueuedTask> popped;
  std::vector<Sampled> batch;
  // Per agent: the tasks of the batch that ask it (indices into batch).
  std::vector<std::vector<size_t>> asking(agents_.size());
  std::vector<agent::SampleRequest> requests;
  while (queue_.PopUpTo(std::max<size_t>(options_.sample_batch, 1), &popped)) {
    const int64_t start = SteadyNowNs();
    batch.clear();
    for (QueuedTask& task : popped) {
      batch.push_back(Sampled{std::move(task), {}, {}});
      Choose(start, batch.back(), rng, &chosen);
      for (size_t slot : chosen) asking[slot].push_back(batch.size() - 1);
    }
    for (size_t slot = 0; slot < agents_.size(); ++slot) {
      if (asking[slot].empty()) continue;
      AskAgent(slot, asking[slot], batch, &requests);
      asking[slot].clear();
    }
    const int64_t spent = SteadyNowNs() - start;
    {
      std::lock_guard lock(decide_mu_);
      for (Sampled& sampled : batch) {
        sampled.queued.sampling_ns += spent;
        to_decide_.push_back(std::move(sampled));
      }
    }
    decide_ready_.notify_all();
  }
}

// The agents `sampled`'s attempt asks, into `chosen`: a pinned task's own
// agent (none, with the reason, when it is unknown or skipped: its task
// fails at once and comes back with its retry, instead of each waiting for
// a timeout), else a random draw, widened to every agent (Widens).
void SchedulerInstance::Choose(int64_t now_ns, Sampled& sampled, std::mt19937_64& rng,
                               std::vector<size_t>* chosen) {
  chosen->clear();
  const agent::PlacementTask& task = sampled.queued.task;
  if (!task.pinned_node.empty()) {
    const auto slot = slot_by_agent_id_.find(task.pinned_agent);
    if (slot == slot_by_agent_id_.end())
      sampled.unfit = "no agent '" + task.pinned_agent + "'";
    else if (!health_.Available(slot->second, now_ns))
      sampled.unfit = "agent " + task.pinned_agent + " is not answering";
    else
      chosen->push_back(slot->second);
    return;
  }
  const bool widen = Widens(sampled.queued);
  if (widen) counters_.widened.fetch_add(1, std::memory_order_relaxed);
  ChooseAgents(now_ns,
               widen ? agents_.size() : AgentsPerAttempt(options_.cluster_percent, agents_.size()),
               rng, chosen);
}

// k = max(1, ceil(Cp * agents / 100)) agents without replacement (partial
// Fisher-Yates), drawn from those AgentHealth does not skip, or from all
// when it skips every one.
void SchedulerInstance::ChooseAgents(int64_t now_ns, size_t wanted, std::mt19937_64& rng,
                                     std::vector<size_t>* chosen) {
  chosen->clear();
  for (size_t i = 0; i < agents_.size(); ++i)
    if (health_.Available(i, now_ns)) chosen->push_back(i);
  if (chosen->empty())
    for (size_t i = 0; i < agents_.size(); ++i) chosen->push_back(i);
  const size_t k = std::min(wanted, chosen->size());
  for (size_t i = 0; i < k; ++i)
    std::swap((*chosen)[i], (*chosen)[i + rng() % (chosen->size() - i)]);
  chosen->resize(k);
}

// Cp of the agents is enough while samples find room; a task whose attempt
// found none, or that has one attempt left, asks them all rather than fail
// because the draw missed the agents with room (scarce nodes live on few).
bool SchedulerInstance::Widens(const QueuedTask& task) const {
  return task.widen || task.attempts + 1 >= options_.max_attempts;
}

// One call to agent `slot` for the batch's tasks `asking`, each answer to
// its task; the agent's health takes one verdict for the call, however
// many tasks it carried. `requests`: the caller's buffer.
void SchedulerInstance::AskAgent(size_t slot, const std::vector<size_t>& asking,
                                 std::vector<Sampled>& batch,
                                 std::vector<agent::SampleRequest>* requests) {
  requests->clear();
  for (size_t i : asking) {
    const agent::PlacementTask& t = batch[i].queued.task;
    requests->push_back({t, options_.node_basis_points, options_.request_timeout, t.pinned_node});
  }
  std::vector<Result<agent::SampleResponse>> answers =
      agents_[slot]->SampleMany(*requests, options_.request_timeout);
  bool answered = false;
  for (size_t k = 0; k < asking.size(); ++k) {
    answered |= answers[k].ok();
    Take(slot, std::move(answers[k]), &batch[asking[k]]);
  }
  if (answered)
    health_.Succeeded(slot);
  else
    health_.Failed(slot, SteadyNowNs());
}

// Agent `slot`'s answer: its nodes join the samples. A failure counts as
// an empty answer.
void SchedulerInstance::Take(size_t slot, Result<agent::SampleResponse> response,
                             Sampled* sampled) {
  if (!response.ok()) {
    counters_.sample_errors.fetch_add(1, std::memory_order_relaxed);
    sampled->unfit = response.status().message();
    return;
  }
  if (response->nodes.empty()) sampled->unfit = std::move(response->reason);
  for (agent::NodeSample& node : response->nodes) {
    node.agent_slot = static_cast<uint32_t>(slot);
    sampled->samples.push_back(std::move(node));
  }
}

// Phases 2 and 3, with this thread's own decision pipeline.
void SchedulerInstance::DecisionLoop() {
  DecisionPipeline pipeline(in_flight_, {options_.commit_candidates, options_.scoring, 1},
                            &spread_);
  while (true) {
    std::unique_lock lock(decide_mu_);
    decide_ready_.wait(lock, [&] { return stopping_ || !to_decide_.empty(); });
    if (stopping_) return;
    Sampled sampled = std::move(to_decide_.front());
    to_decide_.pop_front();
    lock.unlock();
    Attempt(pipeline, sampled);
  }
}

void SchedulerInstance::Attempt(DecisionPipeline& pipeline, Sampled& sampled) {
  QueuedTask& task = sampled.queued;
  ++task.attempts;
  const int64_t decide_start = SteadyNowNs();
  std::vector<Candidate> candidates = pipeline.Decide(task.task, sampled.samples);
  task.decision_ns += SteadyNowNs() - decide_start;
  if (sampled.samples.empty() && !task.task.pinned_node.empty())
    return Finish(task, nullptr, sampled.unfit);  // its one node would answer the same now
  task.widen = candidates.empty();
  if (sampled.samples.empty()) return Retry(std::move(task), "no agent returned an eligible node");
  if (candidates.empty())
    return Retry(std::move(task), "no sampled node passed the decision filters");
  pipeline.Reserve(task.task, candidates);
  const int64_t commit_start = SteadyNowNs();
  std::string reason;
  const Candidate* bound = nullptr;
  MultiBind(task, candidates, &reason, &bound);
  task.commit_ns += SteadyNowNs() - commit_start;
  pipeline.Release(task.task, candidates);
  if (bound != nullptr) {
    spread_.Add(task.task.spec, bound->sample.spread_value);
    return Finish(task, bound, "");
  }
  Retry(std::move(task), reason);
}

bool SchedulerInstance::MultiBind(QueuedTask& task, const std::vector<Candidate>& candidates,
                                  std::string* reason, const Candidate** bound) {
  int conflicts = 0, errors = 0;
  std::string last_error;
  for (const Candidate& c : candidates) {
    // The sampler set agent_slot to the agent's index in agents_.
    AgentTransport* agent = agents_[c.sample.agent_slot];
    agent::CommitRequest request{task.task, c.sample.node_index, c.sample.node_id};
    Result<agent::CommitResponse> response = agent->Commit(request, options_.request_timeout);
    if (response.ok())
      health_.Succeeded(c.sample.agent_slot);
    else
      health_.Failed(c.sample.agent_slot, SteadyNowNs());
    if (response.ok() && response->outcome == agent::CommitOutcome::kBound) {
      *bound = &c;
      return true;
    }
    if (response.ok() && response->outcome == agent::CommitOutcome::kConflict) {
      ++conflicts;
      ++task.conflicts;
      counters_.conflicts.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    ++errors;
    last_error = response.ok() ? response->reason : response.status().message();
    counters_.commit_errors.fetch_add(1, std::memory_order_relaxed);
  }
  if (errors == 0) counters_.conflicted_commits.fetch_add(1, std::memory_order_relaxed);
  *reason = errors == 0 ? "all " + std::to_string(conflicts) + " candidates conflicted"
                        : std::to_string(conflicts) + " candidates conflicted, " +
                              std::to_string(errors) + " failed: " + last_error;
  return false;
}

void SchedulerInstance::Retry(QueuedTask task, const std::string& reason) {
  if (task.attempts >= options_.max_attempts) return Finish(task, nullptr, reason);
  counters_.reschedules.fetch_add(1, std::memory_order_relaxed);
  queue_.Push(std::move(task));
}

void SchedulerInstance::Finish(const QueuedTask& task, const Candidate* bound,
                               const std::string& reason) {
  TaskOutcome outcome;
  outcome.task_id = task.task.id;
  outcome.bound = bound != nullptr;
  if (bound != nullptr) {
    outcome.agent_id = bound->sample.agent_id;
    outcome.node_id = bound->sample.node_id;
  } else {
    outcome.reason = "failed after " + std::to_string(task.attempts) + " attempts: " + reason;
  }
  outcome.attempts = task.attempts;
  outcome.sampling_ns = task.sampling_ns;
  outcome.decision_ns = task.decision_ns;
  outcome.commit_ns = task.commit_ns;
  outcome.end_to_end_ns = SteadyNowNs() - task.submitted_ns;
  outcome.conflicts = task.conflicts;
  (outcome.bound ? counters_.bound : counters_.failed).fetch_add(1, std::memory_order_relaxed);
  if (on_outcome_) on_outcome_(outcome);
  {
    std::lock_guard lock(idle_mu_);
    --outstanding_;
  }
  idle_.notify_all();
}

}  // namespace berth::threephase
