#include "agent/nodes_cache.h"

#include <charconv>
#include <algorithm>
#include <cmath>

namespace berth::agent {
namespace {

std::optional<int64_t> ParseInteger(const Labels& labels, const char* key) {
  auto it = labels.find(key);
  if (it == labels.end()) return std::nullopt;
  int64_t value = 0;
  const std::string& text = it->second;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> ParseDegrees(std::string_view text, double limit) {
  double degrees = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), degrees);
  if (error != std::errc() || end != text.data() + text.size() || !(std::fabs(degrees) <= limit))
    return std::nullopt;
  return std::llround(degrees * 1e6);
}

AgentNode MakeAgentNode(Node node) {
  AgentNode n{
      NodeInfo(std::move(node)), std::nullopt, std::nullopt, 0, Timestamp{}, 0, 0, 0, false};
  const Labels& labels = n.info.node().labels;
  if (auto it = labels.find("geo-location"); it != labels.end())
    n.geo = ParseGeoLocation(it->second);
  n.battery_percent = ParseInteger(labels, "battery-level");
  n.battery_capacity_mah = ParseInteger(labels, "battery-capacity").value_or(0);
  n.scarce = labels.contains("geo-location") || labels.contains("battery-level");
  return n;
}

}  // namespace

std::optional<GeoPoint> ParseGeoLocation(std::string_view text) {
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) return std::nullopt;
  auto lat = ParseDegrees(text.substr(0, comma), 90);
  auto lon = ParseDegrees(text.substr(comma + 1), 180);
  if (!lat || !lon) return std::nullopt;
  return GeoPoint{*lat, *lon};
}

NodesCache::NodesCache(std::vector<Node> nodes, uint32_t capacity)
    : nodes_(std::max<size_t>(capacity, nodes.size()),
             AgentNode{NodeInfo(Node{}), std::nullopt, std::nullopt, 0, Timestamp{}, 0, 0, 0,
                       false}),
      ids_(nodes_.size()),
      locks_(std::make_unique<SpinLock[]>(nodes_.size())) {
  for (Node& node : nodes) {
    const uint32_t i = size_.load(std::memory_order_relaxed);
    ids_[i] = node.id;
    nodes_[i] = MakeAgentNode(std::move(node));
    auto id_of = [this](uint32_t n) -> std::string_view { return NodeId(n); };
    if (!index_.Find(NodeId(i), id_of)) index_.Insert(i, id_of);
    size_.store(i + 1, std::memory_order_relaxed);
  }
}

std::optional<uint32_t> NodesCache::Find(std::string_view id) const {
  std::shared_lock lock(index_mu_);
  return index_.Find(id, [this](uint32_t n) -> std::string_view { return NodeId(n); });
}

Result<uint32_t> NodesCache::Upsert(Node node) {
  std::unique_lock lock(index_mu_);
  auto id_of = [this](uint32_t n) -> std::string_view { return NodeId(n); };
  if (std::optional<uint32_t> found = index_.Find(node.id, id_of)) {
    AgentNode fresh = MakeAgentNode(node);
    std::lock_guard node_lock(locks_[*found]);
    AgentNode& n = nodes_[*found];
    n.info.UpdateNode(std::move(node));
    n.geo = fresh.geo;
    n.battery_percent = fresh.battery_percent;
    n.battery_capacity_mah = fresh.battery_capacity_mah;
    n.scarce = fresh.scarce;
    return *found;
  }
  const uint32_t i = size_.load(std::memory_order_relaxed);
  if (i == nodes_.size())
    return Status::Conflict("the agent holds " + std::to_string(i) +
                                     " nodes, its most (berth-agent --max-nodes)");
  ids_[i] = node.id;
  nodes_[i] = MakeAgentNode(std::move(node));
  index_.Insert(i, id_of);
  size_.store(i + 1, std::memory_order_release);  // readers see the node whole
  return i;
}

Reservation NodesCache::Reserve(uint32_t node, std::shared_ptr<const TaskSpec> spec) {
  Reservation r{node, std::move(spec), {}};
  std::lock_guard lock(locks_[node]);
  nodes_[node].info.Reserve(*r.spec, &r.claims);
  return r;
}

void NodesCache::Rollback(Reservation& r) {
  std::lock_guard lock(locks_[r.node]);
  nodes_[r.node].info.Release(*r.spec, r.claims);
  r.claims.clear();
}

void NodesCache::Bind(Reservation& r, Timestamp at) {
  std::lock_guard lock(locks_[r.node]);
  AgentNode& n = nodes_[r.node];
  n.bound_milli_cpu += r.spec->reservations.milli_cpu;
  n.bound_memory_bytes += r.spec->reservations.memory_bytes;
  ++n.bound_tasks;
  n.last_bound = at;
}

void NodesCache::Unbind(Reservation& r) {
  std::lock_guard lock(locks_[r.node]);
  AgentNode& n = nodes_[r.node];
  n.info.Release(*r.spec, r.claims);
  n.bound_milli_cpu -= r.spec->reservations.milli_cpu;
  n.bound_memory_bytes -= r.spec->reservations.memory_bytes;
  --n.bound_tasks;
  r.claims.clear();
}

bool NodesCache::Overcommitted(uint32_t node) const {
  return Read(node, [](const AgentNode& n) {
    const NodeResources& total = n.info.node().resources;
    return n.bound_milli_cpu > total.milli_cpu || n.bound_memory_bytes > total.memory_bytes;
  });
}

}  // namespace berth::agent
