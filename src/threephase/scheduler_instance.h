// SchedulerInstance: one scheduler of the three-phase path
// (docs/threephase.md). Several instances may share the same agents; they
// share nothing else.
//
//   Submit -> sampling queue (sort plugin) -> samplers, up to sample_batch
//   tasks at a time: 2-smart sampling of
//   ceil(Cp * agents / 100) agents (at least 1), each asked for
//   max(floor(Np_bp * nodes / 10000), 1) nodes -> decision pipelines: filter,
//   score, the m best, reserve -> MultiBind: commit to the candidates in rank
//   order; the first success binds the task.
//
// Agents that keep failing are skipped for a while (AgentHealth). A task
// pinned to a node (a global service's) asks only that node's agent; when
// the node does not pass, or its agent does not answer, the task fails at
// once with the reason (asking again at once would find the same).
//
// A task whose attempt fails (no samples, no sample passed the decision
// filters, or every candidate conflicted) goes back to the sampling queue;
// after `max_attempts` attempts it is failed with the reason of the last
// one, never dropped. Widening: an attempt after one that found no node
// that passed, and a task's last attempt, ask every available agent instead
// of Cp of them, so a task is failed only when no agent offered a node it
// fits (each agent looks at all its nodes before answering with fewer than
// asked), not because the draw missed the agents with room. Every task ends in the outcome callback
// exactly once (bound or failed) unless the instance stops first.
//
// Thread-safe: Submit from any thread. Start once; Stop joins every thread
// (also done by the destructor).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "threephase/agent_health.h"
#include "threephase/decision.h"
#include "threephase/sampling_queue.h"
#include "threephase/transport.h"

namespace berth::threephase {

struct SchedulerOptions {
  int cluster_percent = 50;         // Cp: share of agents sampled per attempt
  int64_t node_basis_points = 400;  // Np: share of each agent's nodes, in 1/10000
  size_t commit_candidates = 3;     // m
  int max_attempts = 10;
  // Sampling a task costs about three times its decision and commit
  // (threephase_bench), so two samplers keep one decision pipeline busy.
  int samplers = 2;  // sampler threads
  // The most queued tasks a sampler takes at once: each agent is asked
  // once for all of the batch's tasks that chose it (one round trip).
  size_t sample_batch = 16;
  int decision_pipelines = 1;                // decision + MultiBind threads
  Duration request_timeout = Duration{200};  // per agent request
  AgentHealthOptions health;                 // when failing agents are skipped
  agent::ResourceScoring scoring = agent::ResourceScoring::kLeastAllocated;
  uint64_t seed = 1;  // agent choice
};

struct TaskOutcome {
  std::string task_id;
  bool bound = false;
  std::string agent_id, node_id;  // where it was bound
  std::string reason;             // why it failed
  int attempts = 0;
  // Time in each phase, summed over attempts, and submit -> outcome.
  int64_t sampling_ns = 0, decision_ns = 0, commit_ns = 0, end_to_end_ns = 0;
  int conflicts = 0;  // candidates that answered "conflict"
};

struct SchedulerCounters {
  // conflicts: candidates that answered "conflict"; conflicted_commits:
  // MultiBind rounds in which every candidate conflicted (the task went back
  // to the queue), Vela's "conflicts" figure.
  std::atomic<uint64_t> submitted{0}, bound{0}, failed{0}, reschedules{0}, conflicts{0},
      conflicted_commits{0}, commit_errors{0}, sample_errors{0};
  // Attempts that asked every agent (widening), of all attempts.
  std::atomic<uint64_t> widened{0};
};

class SchedulerInstance {
 public:
  SchedulerInstance(std::vector<AgentTransport*> agents, SchedulerOptions options,
                    std::function<void(const TaskOutcome&)> on_outcome = nullptr,
                    std::unique_ptr<TaskOrder> order = nullptr);
  ~SchedulerInstance();
  SchedulerInstance(const SchedulerInstance&) = delete;
  SchedulerInstance& operator=(const SchedulerInstance&) = delete;

  void Start();
  void Stop();
  void Submit(agent::PlacementTask task);
  // Waits until every submitted task has an outcome; false on timeout.
  bool WaitIdle(Duration timeout);

  const SchedulerCounters& counters() const { return counters_; }
  // Shared with callers that reach the same agents (berthd's eligibility
  // and binding calls), indexed like the constructor's `agents`.
  AgentHealth& health() { return health_; }
  const AgentHealth& health() const { return health_; }
  // Number of agents sampled per attempt: max(1, ceil(Cp * agents / 100)).
  static size_t AgentsPerAttempt(int cluster_percent, size_t agents);

 private:
  // A task between the samplers and the decision pipelines.
  struct Sampled {
    QueuedTask queued;
    std::vector<agent::NodeSample> samples;
    std::string unfit;  // a pinned task without samples: why
  };

  void SamplerLoop(uint64_t seed);
  void Choose(int64_t now_ns, Sampled& sampled, std::mt19937_64& rng, std::vector<size_t>* chosen);
  // `wanted` agents (at most those available) one attempt asks, into `chosen`.
  void ChooseAgents(int64_t now_ns, size_t wanted, std::mt19937_64& rng,
                    std::vector<size_t>* chosen);
  // Whether `task`'s next attempt asks every agent (widening, above).
  bool Widens(const QueuedTask& task) const;
  void AskAgent(size_t slot, const std::vector<size_t>& asking, std::vector<Sampled>& batch,
                std::vector<agent::SampleRequest>* requests);
  void Take(size_t slot, Result<agent::SampleResponse> response, Sampled* sampled);
  void DecisionLoop();
  void Attempt(DecisionPipeline& pipeline, Sampled& sampled);
  // Commits to the candidates in rank order; true when one bound the task.
  bool MultiBind(QueuedTask& task, const std::vector<Candidate>& candidates, std::string* reason,
                 const Candidate** bound);
  void Retry(QueuedTask task, const std::string& reason);
  void Finish(const QueuedTask& task, const Candidate* bound, const std::string& reason);

  std::vector<AgentTransport*> agents_;
  std::unordered_map<std::string, size_t> slot_by_agent_id_;
  SchedulerOptions options_;
  AgentHealth health_;
  std::function<void(const TaskOutcome&)> on_outcome_;
  SamplingQueue queue_;
  InFlightDemand in_flight_;
  SpreadCounts spread_;  // this instance's bindings per spread label value
  SchedulerCounters counters_;

  std::mutex decide_mu_;
  std::condition_variable decide_ready_;
  std::deque<Sampled> to_decide_;
  bool stopping_ = false;

  std::mutex idle_mu_;
  std::condition_variable idle_;
  uint64_t outstanding_ = 0;
  std::atomic<uint64_t> next_arrival_{0};

  std::vector<std::thread> threads_;
};

}  // namespace berth::threephase
