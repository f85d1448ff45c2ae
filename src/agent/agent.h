// Agent: the cluster agent of docs/threephase.md. Owns one cluster's nodes
// and is the only authority on whether a task fits one of them. Serves
// sampling requests (phase 1) and commit requests (phase 3).
//
// Sample: a free sampling pipeline (its own plugin instances) walks the
// shared sampling strategy, keeping nodes that pass every plugin filter, until
// it has max(floor(Np_bp * nodes / 10000), 1) of them, has looked at every
// node once, or the request's time budget is spent.
// Commit (the node named by id; the index from the sample is a hint, so a
// scheduler re-binding a stored task needs only the id): (1) reserve the
// task's demand on the node at once; (2) take a free
// binding pipeline; (3) lock the node through the entity locker; (4) run the
// conflict checks; (5) bind, or roll the reservation back exactly and answer
// "conflict".
// A sample request naming a node (a global service's pinned task) looks at
// that node only and says why it did not pass.
// Eligible: the nodes where a task may run as far as the node alone
// decides (filter::Pipeline::Scope::kNodeOnly): where berthd makes a global
// service's tasks.
// Readiness is checked at commit too: a node that went down since it was
// sampled is a conflict ("node 'n1' is down").
// Release: a bound task stopped; its demand goes back to its node. The agent
// remembers each binding by task id until then (a task id bound twice, by a
// scheduler retrying after a crash, holds both bindings; Release frees all).
//
// Thread-safe: Sample, Commit and Release may be called from any number of threads;
// at most `sampling_pipelines` samples and `binding_pipelines` commits run
// at once, the rest wait for a free pipeline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "agent/conflict_check.h"
#include "agent/entity_locker.h"
#include "agent/node_plugin.h"
#include "agent/nodes_cache.h"
#include "agent/protocol.h"
#include "agent/resources_fit.h"
#include "agent/sampling_strategy.h"
#include "core/status.h"
#include "core/time.h"

namespace berth::agent {

enum class SamplingKind { kRandom, kRoundRobin };

struct AgentOptions {
  std::string id = "agent";
  SamplingKind sampling = SamplingKind::kRandom;
  int sampling_pipelines = 4;  // concurrent Sample calls
  int binding_pipelines = 4;   // concurrent commits past step 1
  ResourceScoring scoring = ResourceScoring::kLeastAllocated;
  // Weights of the scoring plugins in the final score.
  int64_t resources_weight = 1;
  int64_t geo_weight = 1;
  int64_t battery_weight = 1;
  int64_t lru_weight = 1;
  // ScarcityPenalty's weight. 6 makes its 100 points outweigh the whole
  // range of the five other scores (four here, resources fit at the
  // scheduler; 5 x 100 < 6 x 100), so an unconstrained task never prefers a
  // scarce node while its sample offers another. 0 turns the penalty off.
  int64_t scarcity_weight = 6;
  // The most nodes the agent may hold: those it starts with, and more up to
  // this as berth-node machines join it (UpsertNode). Default 0: the nodes
  // it starts with.
  uint32_t max_nodes = 0;
  uint64_t seed = 1;             // for random sampling
  const Clock* clock = nullptr;  // null: the system clock
};

struct AgentCounters {
  std::atomic<uint64_t> samples{0}, sampled_nodes{0}, bound{0}, conflicts{0}, errors{0},
      released{0};
};

class Agent {
 public:
  Agent(AgentOptions options, std::vector<Node> nodes);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  const std::string& id() const { return options_.id; }
  SampleResponse Sample(const SampleRequest& request);
  CommitResponse Commit(const CommitRequest& request);
  std::vector<std::string> Eligible(const TaskSpec& spec) const;
  // Adds a node that joined, or updates one (its state, resources or
  // labels); what is bound to it stays. Conflict past max_nodes.
  Result<uint32_t> UpsertNode(Node node) { return nodes_.Upsert(std::move(node)); }
  // Frees the bindings of `task_id`; false when it has none here.
  bool Release(const std::string& task_id);
  // Releases each of `task_ids`; returns how many had bindings here.
  size_t Release(const std::vector<std::string>& task_ids);
  size_t bindings() const;
  // The ids of the tasks bound here, each once, sorted.
  std::vector<std::string> BoundTasks() const;

  const NodesCache& nodes() const { return nodes_; }
  const EntityLocker& locker() const { return locker_; }
  const AgentCounters& counters() const { return counters_; }

  // The node count a request for `basis_points` asks for:
  // max(floor(basis_points * nodes / 10000), 1), at most the node count.
  static uint32_t SampleSize(int64_t basis_points, uint32_t nodes);

 private:
  struct SamplingPipeline {
    std::vector<WeightedPlugin> plugins;
    size_t rejected_by = 0;  // the plugin whose Filter rejected the last node
  };
  struct BindingPipeline {
    std::vector<std::unique_ptr<ConflictCheck>> checks;
  };
  // A fixed set of pipelines handed out one caller at a time.
  template <typename Pipeline>
  class Pool {
   public:
    void Add(std::unique_ptr<Pipeline> p) { free_.push_back(std::move(p)); }
    std::unique_ptr<Pipeline> Take();
    void Give(std::unique_ptr<Pipeline> p);

   private:
    std::mutex mu_;
    std::condition_variable available_;
    std::vector<std::unique_ptr<Pipeline>> free_;
  };

  std::unique_ptr<SamplingPipeline> MakeSamplingPipeline() const;
  // Runs every plugin on `node`; fills `sample` (with the node's value of
  // `spread_label`, if any) when all filters pass.
  bool Evaluate(SamplingPipeline& pipeline, uint32_t node, std::string_view spread_label,
                NodeSample* sample) const;
  void SampleNode(SamplingPipeline& pipeline, const std::string& node_id,
                  SampleResponse* response) const;

  AgentOptions options_;
  std::unique_ptr<Clock> own_clock_;
  const Clock* clock_;
  NodesCache nodes_;
  EntityLocker locker_;
  std::unique_ptr<SamplingStrategy> strategy_;
  Pool<SamplingPipeline> sampling_;
  Pool<BindingPipeline> binding_;
  AgentCounters counters_;
  mutable std::mutex bindings_mu_;
  std::unordered_multimap<std::string, Reservation> bindings_;  // by task id
};

}  // namespace berth::agent
