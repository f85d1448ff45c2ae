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
#include <map>
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
  // Tasks of the same spec this instance bound to nodes with the sample's
  // spread value (SpreadCounts); 0 when the task has no spread preference.
  int64_t spread_count = 0;
};

// Sorts best first (spread count ascending, so the least used label value
// comes first as in the full view's tree; then score descending; ties by
// agent id, then node id, so the order is reproducible) and keeps the
// first m.
void KeepBest(std::vector<Candidate>& candidates, size_t m);

// How many tasks of each spec this instance bound per value of the spec's
// spread label (docs/threephase.md, "Spread preferences"). Specs are told
// apart by identity (one spec is shared by the tasks of one service
// version) and held weakly, so a spec that is gone is forgotten. Counts only
// grow: tasks stopping later are not seen. Thread-safe.
class SpreadCounts {
 public:
  // Sets each candidate's spread_count for `spec`; all 0 when `spec` has no
  // spread label. One lock for the whole set, no allocation.
  void Rank(const std::shared_ptr<const TaskSpec>& spec, std::vector<Candidate>& candidates) const;
  // One more task of `spec` bound to a node whose spread value is `value`.
  void Add(const std::shared_ptr<const TaskSpec>& spec, const std::string& value);
  int64_t Get(const std::shared_ptr<const TaskSpec>& spec, std::string_view value) const;

 private:
  struct PerSpec {
    std::weak_ptr<const TaskSpec> spec;  // expired: the entry is stale
    std::map<std::string, int64_t, std::less<>> by_value;
  };
  // Drops the entries of specs that are gone, when the map has doubled.
  void PruneLocked();
  mutable std::mutex mu_;
  std::unordered_map<const TaskSpec*, PerSpec> specs_;
  size_t prune_at_ = 64;
};

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
  // `spread`: the instance's counts for spread preferences; null: ignored.
  DecisionPipeline(InFlightDemand& in_flight, DecisionOptions options,
                   const SpreadCounts* spread = nullptr);

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
  const SpreadCounts* spread_;
  std::vector<Weighted> plugins_;
};

}  // namespace berth::threephase
