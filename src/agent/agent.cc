#include "agent/agent.h"

#include <algorithm>
#include <chrono>

#include "agent/battery_level.h"
#include "agent/geo_location.h"
#include "agent/least_recently_used.h"
#include "agent/placement_filters.h"
#include "agent/random_sampling.h"
#include "agent/round_robin_sampling.h"
#include "agent/scarcity_penalty.h"
#include "filter/pipeline.h"

namespace berth::agent {

template <typename Pipeline>
std::unique_ptr<Pipeline> Agent::Pool<Pipeline>::Take() {
  std::unique_lock lock(mu_);
  available_.wait(lock, [&] { return !free_.empty(); });
  std::unique_ptr<Pipeline> p = std::move(free_.back());
  free_.pop_back();
  return p;
}

template <typename Pipeline>
void Agent::Pool<Pipeline>::Give(std::unique_ptr<Pipeline> p) {
  {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(p));
  }
  available_.notify_one();
}

Agent::Agent(AgentOptions options, std::vector<Node> nodes)
    : options_(std::move(options)),
      nodes_(std::move(nodes), options_.max_nodes) {
  if (options_.clock == nullptr) own_clock_ = std::make_unique<SystemClock>();
  clock_ = options_.clock != nullptr ? options_.clock : own_clock_.get();
  if (options_.sampling == SamplingKind::kRoundRobin)
    strategy_ = std::make_unique<RoundRobinSampling>();
  else
    strategy_ = std::make_unique<RandomSampling>(options_.seed);
  for (int i = 0; i < std::max(1, options_.sampling_pipelines); ++i)
    sampling_.Add(MakeSamplingPipeline());
  for (int i = 0; i < std::max(1, options_.binding_pipelines); ++i) {
    auto pipeline = std::make_unique<BindingPipeline>();
    pipeline->checks.push_back(std::make_unique<ReadyConflict>());
    pipeline->checks.push_back(std::make_unique<ResourcesConflict>());
    pipeline->checks.push_back(std::make_unique<PortsConflict>());
    binding_.Add(std::move(pipeline));
  }
}

Agent::~Agent() = default;

std::unique_ptr<Agent::SamplingPipeline> Agent::MakeSamplingPipeline() const {
  auto p = std::make_unique<SamplingPipeline>();
  p->plugins.push_back({std::make_unique<PlacementFilters>(), 0});
  p->plugins.push_back(
      {std::make_unique<ResourcesFit>(options_.scoring), options_.resources_weight});
  p->plugins.push_back({std::make_unique<GeoLocation>(), options_.geo_weight});
  p->plugins.push_back({std::make_unique<BatteryLevel>(), options_.battery_weight});
  p->plugins.push_back({std::make_unique<LeastRecentlyUsed>(*clock_), options_.lru_weight});
  p->plugins.push_back({std::make_unique<ScarcityPenalty>(), options_.scarcity_weight});
  return p;
}

uint32_t Agent::SampleSize(int64_t basis_points, uint32_t nodes) {
  // max(floor(Np_bp / 10000 * nodes), 1), in integers.
  const int64_t wanted = std::max<int64_t>(std::max<int64_t>(basis_points, 0) * nodes / 10'000, 1);
  return static_cast<uint32_t>(std::min<int64_t>(wanted, nodes));
}

std::string_view SpreadLabel(const TaskSpec& spec) {
  constexpr std::string_view kPrefix = "node.labels.";
  if (spec.preferences.empty()) return {};
  const PlacementPreference& first = spec.preferences.front();
  if (first.kind != PlacementPreference::Kind::kSpread || !first.descriptor.starts_with(kPrefix))
    return {};
  return std::string_view(first.descriptor).substr(kPrefix.size());
}

// Runs every plugin on a locked node; fills `sample` when all filters pass.
bool Agent::Evaluate(SamplingPipeline& pipeline, uint32_t node, std::string_view spread_label,
                     NodeSample* sample) const {
  return nodes_.Read(node, [&](const AgentNode& n) {
    int64_t score_sum = 0, weight_sum = 0;
    for (size_t i = 0; i < pipeline.plugins.size(); ++i) {
      const WeightedPlugin& wp = pipeline.plugins[i];
      if (!wp.plugin->Filter(n)) {
        pipeline.rejected_by = i;
        return false;
      }
      if (wp.plugin->HasScore() && wp.weight > 0) {
        score_sum += wp.weight * wp.plugin->Score(n);
        weight_sum += wp.weight;
      }
    }
    const NodeResources& total = n.info.node().resources;
    *sample = {options_.id,
               n.info.node().id,
               0,
               node,
               score_sum,
               weight_sum,
               n.info.available_milli_cpu(),
               n.info.available_memory_bytes(),
               total.milli_cpu,
               total.memory_bytes,
               {}};
    // Only nodes that passed pay for the label lookup; short values stay in
    // the string's inline buffer.
    if (!spread_label.empty())
      if (auto it = n.info.node().labels.find(spread_label); it != n.info.node().labels.end())
        sample->spread_value = it->second;
    return true;
  });
}

SampleResponse Agent::Sample(const SampleRequest& request) {
  counters_.samples.fetch_add(1, std::memory_order_relaxed);
  SampleResponse response;
  const uint32_t count = nodes_.size();
  if (count == 0 || request.task.spec == nullptr) return response;
  const uint32_t wanted = SampleSize(request.basis_points, count);
  const auto deadline = std::chrono::steady_clock::now() + request.budget;
  std::unique_ptr<SamplingPipeline> pipeline = sampling_.Take();
  for (const WeightedPlugin& wp : pipeline->plugins) wp.plugin->SetTask(request.task);
  if (!request.node_id.empty()) {
    SampleNode(*pipeline, request.node_id, &response);
    sampling_.Give(std::move(pipeline));
    counters_.sampled_nodes.fetch_add(response.nodes.size(), std::memory_order_relaxed);
    return response;
  }
  const std::string_view spread_label = SpreadLabel(*request.task.spec);
  SampleCursor cursor = strategy_->Begin(count);
  response.nodes.reserve(wanted);
  NodeSample sample;
  while (response.nodes.size() < wanted && response.looked_at < count) {
    ++response.looked_at;
    if (Evaluate(*pipeline, strategy_->Next(cursor, count), spread_label, &sample))
      response.nodes.push_back(sample);
    // The clock is read every 64 nodes: cheap, and a node takes microseconds.
    if ((response.looked_at & 63) == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  sampling_.Give(std::move(pipeline));
  counters_.sampled_nodes.fetch_add(response.nodes.size(), std::memory_order_relaxed);
  return response;
}

void Agent::SampleNode(SamplingPipeline& pipeline, const std::string& node_id,
                       SampleResponse* response) const {
  const std::optional<uint32_t> node = nodes_.Find(node_id);
  if (!node) {
    response->reason = "agent " + options_.id + " has no node '" + node_id + "'";
    return;
  }
  response->looked_at = 1;
  NodeSample sample;
  if (Evaluate(pipeline, *node, {}, &sample)) {
    response->nodes.push_back(sample);
    return;
  }
  const NodePlugin& plugin = *pipeline.plugins[pipeline.rejected_by].plugin;
  const std::string why = plugin.Explain();
  response->reason =
      "node '" + node_id +
      "': " + (why.empty() ? "rejected by the " + std::string(plugin.name()) + " plugin" : why);
}

std::vector<std::string> Agent::Eligible(const TaskSpec& spec) const {
  filter::Pipeline pipeline;
  pipeline.SetTask(spec, 0, filter::Pipeline::Scope::kNodeOnly);
  std::vector<std::string> ids;
  for (uint32_t i = 0; i < nodes_.size(); ++i)
    if (nodes_.Read(i, [&](const AgentNode& n) { return pipeline.Process(n.info); }))
      ids.push_back(nodes_.NodeId(i));
  return ids;
}

CommitResponse Agent::Commit(const CommitRequest& request) {
  // The index is a hint from the sample; the id decides.
  std::optional<uint32_t> node =
      request.node_index < nodes_.size() && nodes_.NodeId(request.node_index) == request.node_id
          ? std::optional<uint32_t>(request.node_index)
          : nodes_.Find(request.node_id);
  if (request.task.spec == nullptr || !node) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    return {CommitOutcome::kError,
            "unknown node '" + request.node_id + "' on agent " + options_.id};
  }
  // (1) Reserve at once, even past capacity: later samples see it.
  Reservation reservation = nodes_.Reserve(*node, request.task.spec);
  // (2) a free binding pipeline, (3) the node's lock.
  std::unique_ptr<BindingPipeline> pipeline = binding_.Take();
  std::string conflict;
  {
    EntityLock lock(locker_, *node);
    // (4) conflict checks against bound tasks plus every reservation.
    conflict = nodes_.Read(*node, [&](const AgentNode& n) {
      for (const auto& check : pipeline->checks)
        if (std::string reason = check->Check(n, reservation); !reason.empty()) return reason;
      return std::string();
    });
    // (5) bind, or give back exactly what was taken.
    if (conflict.empty())
      nodes_.Bind(reservation, clock_->Now());
    else
      nodes_.Rollback(reservation);
  }
  if (conflict.empty()) {
    std::lock_guard lock(bindings_mu_);
    bindings_.emplace(request.task.id, std::move(reservation));
  }
  binding_.Give(std::move(pipeline));
  if (!conflict.empty()) {
    counters_.conflicts.fetch_add(1, std::memory_order_relaxed);
    return {CommitOutcome::kConflict, conflict};
  }
  counters_.bound.fetch_add(1, std::memory_order_relaxed);
  return {CommitOutcome::kBound, ""};
}

bool Agent::Release(const std::string& task_id) {
  std::vector<Reservation> released;
  {
    std::lock_guard lock(bindings_mu_);
    auto [begin, end] = bindings_.equal_range(task_id);
    for (auto it = begin; it != end; ++it) released.push_back(std::move(it->second));
    bindings_.erase(begin, end);
  }
  for (Reservation& binding : released) nodes_.Unbind(binding);
  counters_.released.fetch_add(released.size(), std::memory_order_relaxed);
  return !released.empty();
}

size_t Agent::Release(const std::vector<std::string>& task_ids) {
  size_t released = 0;
  for (const std::string& id : task_ids) released += Release(id) ? 1 : 0;
  return released;
}

size_t Agent::bindings() const {
  std::lock_guard lock(bindings_mu_);
  return bindings_.size();
}

std::vector<std::string> Agent::BoundTasks() const {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(bindings_mu_);
    for (const auto& [id, binding] : bindings_) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace berth::agent
