// The decision phase (docs/threephase.md, "The scheduler instance", step 2):
// scheduler-side plugins and the choice of commit candidates.
//
// A DecisionPipeline owns its own plugin instances (no locking between
// pipelines) and runs three stages on a task's samples: filter, score, and
// reserve. The reserve stage records the task's demand on its candidates in
// the instance's InFlightDemand, so the instance's other pipelines see those
// nodes as fuller until the commit is over; the scheduler-side resources
// filter and score read it. One pipeline is used by one thread at a time;
// InFlightDemand is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agent/protocol.h"
#include "agent/resources_fit.h"

namespace berth::threephase {

// Final score of a node (docs/threephase.md, "The scheduler instance", step
// 2; Berth's choice):
//   (agent weighted scores + scheduler weighted scores) / (all weights),
// in integers, 0 when there are no weights.
int64_t FinalScore(int64_t agent_score_sum, int64_t agent_weight_sum, int64_t scheduler_score_sum,
                   int64_t scheduler_weight_sum);

struct Candidate {
  agent::NodeSample sample;
  int64_t score = 0;
};

// Sorts best first (score descending; ties by agent id, then node id, so the
// order is reproducible) and keeps the first m.
void KeepBest(std::vector<Candidate>& candidates, size_t m);

// Demand this instance has chosen but not yet committed, per (agent slot,
// node index). Empty most of the time, so lookups check that first.
class InFlightDemand {
 public:
  struct Demand {
    int64_t milli_cpu = 0;
    int64_t memory_bytes = 0;
  };
  void Add(const agent::NodeSample& node, const Reservations& r);
  void Remove(const agent::NodeSample& node, const Reservations& r);
  Demand Get(const agent::NodeSample& node) const;
  size_t size() const;

 private:
  static uint64_t Key(const agent::NodeSample& node) {
    return (uint64_t{node.agent_slot} << 32) | node.node_index;
  }
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Demand> demand_;
  std::atomic<size_t> entries_{0};  // demand_.size(), readable without the lock
};

class DecisionPlugin {
 public:
  virtual ~DecisionPlugin() = default;
  virtual std::string_view name() const = 0;
  virtual void SetTask(const agent::PlacementTask& task) = 0;
  virtual bool Filter(const agent::NodeSample& node) const = 0;
  virtual bool HasScore() const = 0;
  virtual int64_t Score(const agent::NodeSample& node) const = 0;  // 0..100
};

// Resources fit on the sampled free amounts less this instance's in-flight
// demand: filter, and the least/most-allocated score.
class SampleResourcesFit final : public DecisionPlugin {
 public:
  SampleResourcesFit(const InFlightDemand& in_flight, agent::ResourceScoring scoring)
      : in_flight_(in_flight), scoring_(scoring) {}
  std::string_view name() const override { return "sample-resources-fit"; }
  void SetTask(const agent::PlacementTask& task) override { demand_ = &task.spec->reservations; }
  bool Filter(const agent::NodeSample& node) const override;
  bool HasScore() const override { return true; }
  int64_t Score(const agent::NodeSample& node) const override;

 private:
  const InFlightDemand& in_flight_;
  agent::ResourceScoring scoring_;
  const Reservations* demand_ = nullptr;
};

struct DecisionOptions {
  size_t candidates = 3;  // m, commitCandidateNodes
  agent::ResourceScoring scoring = agent::ResourceScoring::kLeastAllocated;
  int64_t resources_weight = 1;  // weight of SampleResourcesFit's score
};

class DecisionPipeline {
 public:
  DecisionPipeline(InFlightDemand& in_flight, DecisionOptions options);

  // Filter and score: the m best samples, best first (empty: none passed).
  std::vector<Candidate> Decide(const agent::PlacementTask& task,
                                const std::vector<agent::NodeSample>& samples);
  // The reserve stage, and its undo once the commit is over.
  void Reserve(const agent::PlacementTask& task, const std::vector<Candidate>& candidates);
  void Release(const agent::PlacementTask& task, const std::vector<Candidate>& candidates);

 private:
  struct Weighted {
    std::unique_ptr<DecisionPlugin> plugin;
    int64_t weight;
  };
  InFlightDemand& in_flight_;
  DecisionOptions options_;
  std::vector<Weighted> plugins_;
};

}  // namespace berth::threephase
