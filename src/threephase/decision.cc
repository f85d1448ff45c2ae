#include "threephase/decision.h"

#include <algorithm>

namespace berth::threephase {

int64_t FinalScore(int64_t agent_score_sum, int64_t agent_weight_sum, int64_t scheduler_score_sum,
                   int64_t scheduler_weight_sum) {
  const int64_t weights = agent_weight_sum + scheduler_weight_sum;
  if (weights <= 0) return 0;  // never divide by zero
  return (agent_score_sum + scheduler_score_sum) / weights;
}

void KeepBest(std::vector<Candidate>& candidates, size_t m) {
  auto better = [](const Candidate& a, const Candidate& b) {
    if (a.spread_count != b.spread_count) return a.spread_count < b.spread_count;
    if (a.score != b.score) return a.score > b.score;
    if (a.sample.agent_id != b.sample.agent_id) return a.sample.agent_id < b.sample.agent_id;
    return a.sample.node_id < b.sample.node_id;
  };
  if (candidates.size() > m) {
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(m),
                      candidates.end(), better);
    candidates.resize(m);
  } else {
    std::sort(candidates.begin(), candidates.end(), better);
  }
}

void SpreadCounts::Rank(const std::shared_ptr<const TaskSpec>& spec,
                        std::vector<Candidate>& candidates) const {
  if (!spec || agent::SpreadLabel(*spec).empty()) return;
  std::lock_guard lock(mu_);
  auto it = specs_.find(spec.get());
  const bool known = it != specs_.end() && !it->second.spec.expired();
  for (Candidate& c : candidates) {
    c.spread_count = 0;
    if (!known) continue;
    auto value = it->second.by_value.find(std::string_view(c.sample.spread_value));
    if (value != it->second.by_value.end()) c.spread_count = value->second;
  }
}

void SpreadCounts::Add(const std::shared_ptr<const TaskSpec>& spec, const std::string& value) {
  if (!spec || agent::SpreadLabel(*spec).empty()) return;
  std::lock_guard lock(mu_);
  PerSpec& entry = specs_[spec.get()];
  // A new spec at the address of one that is gone starts from nothing.
  if (entry.spec.expired()) entry = PerSpec{spec, {}};
  ++entry.by_value[value];
  PruneLocked();
}

int64_t SpreadCounts::Get(const std::shared_ptr<const TaskSpec>& spec,
                          std::string_view value) const {
  std::lock_guard lock(mu_);
  auto it = specs_.find(spec.get());
  if (it == specs_.end() || it->second.spec.expired()) return 0;
  auto v = it->second.by_value.find(value);
  return v == it->second.by_value.end() ? 0 : v->second;
}

void SpreadCounts::PruneLocked() {
  if (specs_.size() < prune_at_) return;
  std::erase_if(specs_, [](const auto& entry) { return entry.second.spec.expired(); });
  prune_at_ = std::max<size_t>(64, 2 * specs_.size());
}

void InFlightDemand::Add(const agent::NodeSample& node, const Reservations& r) {
  std::lock_guard lock(mu_);
  Demand& d = demand_[Key(node)];
  d.milli_cpu += r.milli_cpu;
  d.memory_bytes += r.memory_bytes;
  entries_.store(demand_.size(), std::memory_order_relaxed);
}

void InFlightDemand::Remove(const agent::NodeSample& node, const Reservations& r) {
  std::lock_guard lock(mu_);
  auto it = demand_.find(Key(node));
  if (it == demand_.end()) return;
  it->second.milli_cpu -= r.milli_cpu;
  it->second.memory_bytes -= r.memory_bytes;
  if (it->second.milli_cpu == 0 && it->second.memory_bytes == 0) demand_.erase(it);
  entries_.store(demand_.size(), std::memory_order_relaxed);
}

InFlightDemand::Demand InFlightDemand::Get(const agent::NodeSample& node) const {
  if (entries_.load(std::memory_order_relaxed) == 0) return {};
  std::lock_guard lock(mu_);
  auto it = demand_.find(Key(node));
  return it == demand_.end() ? Demand{} : it->second;
}

size_t InFlightDemand::size() const {
  std::lock_guard lock(mu_);
  return demand_.size();
}

bool SampleResourcesFit::Filter(const agent::NodeSample& node) const {
  const InFlightDemand::Demand pending = in_flight_.Get(node);
  return node.free_milli_cpu - pending.milli_cpu >= demand_->milli_cpu &&
         node.free_memory_bytes - pending.memory_bytes >= demand_->memory_bytes;
}

int64_t SampleResourcesFit::Score(const agent::NodeSample& node) const {
  const InFlightDemand::Demand pending = in_flight_.Get(node);
  return agent::AllocationScore(
      scoring_, node.total_milli_cpu, node.free_milli_cpu - pending.milli_cpu, demand_->milli_cpu,
      node.total_memory_bytes, node.free_memory_bytes - pending.memory_bytes,
      demand_->memory_bytes);
}

DecisionPipeline::DecisionPipeline(InFlightDemand& in_flight, DecisionOptions options,
                                   const SpreadCounts* spread)
    : in_flight_(in_flight), options_(options), spread_(spread) {
  plugins_.push_back({std::make_unique<SampleResourcesFit>(in_flight_, options_.scoring),
                      options_.resources_weight});
}

std::vector<Candidate> DecisionPipeline::Decide(const agent::PlacementTask& task,
                                                const std::vector<agent::NodeSample>& samples) {
  for (Weighted& w : plugins_) w.plugin->SetTask(task);
  std::vector<Candidate> candidates;
  candidates.reserve(samples.size());
  for (const agent::NodeSample& sample : samples) {
    int64_t score_sum = 0, weight_sum = 0;
    bool passes = true;
    for (const Weighted& w : plugins_) {
      if (!w.plugin->Filter(sample)) {
        passes = false;
        break;
      }
      if (w.plugin->HasScore() && w.weight > 0) {
        score_sum += w.weight * w.plugin->Score(sample);
        weight_sum += w.weight;
      }
    }
    if (passes)
      candidates.push_back(
          {sample, FinalScore(sample.score_sum, sample.weight_sum, score_sum, weight_sum), 0});
  }
  if (spread_ != nullptr) spread_->Rank(task.spec, candidates);
  KeepBest(candidates, std::max<size_t>(1, options_.candidates));
  return candidates;
}

void DecisionPipeline::Reserve(const agent::PlacementTask& task,
                               const std::vector<Candidate>& candidates) {
  for (const Candidate& c : candidates) in_flight_.Add(c.sample, task.spec->reservations);
}

void DecisionPipeline::Release(const agent::PlacementTask& task,
                               const std::vector<Candidate>& candidates) {
  for (const Candidate& c : candidates) in_flight_.Remove(c.sample, task.spec->reservations);
}

}  // namespace berth::threephase
