#include "core/node_info.h"

#include <algorithm>

namespace berth {

NodeInfo::NodeInfo(Node node) { UpdateNode(std::move(node)); }

void NodeInfo::UpdateNode(Node node) {
  // Keep what tracked tasks hold: used = old total - old available.
  int64_t used_cpu = node_.resources.milli_cpu - available_milli_cpu_;
  int64_t used_memory = node_.resources.memory_bytes - available_memory_bytes_;
  std::vector<NodeGenericResource> old_total = std::move(node_.resources.generic);
  std::vector<NodeGenericResource> old_available = std::move(available_generic_);
  node_ = std::move(node);
  std::sort(node_.resources.generic.begin(), node_.resources.generic.end(),
            [](const auto& a, const auto& b) { return a.kind < b.kind; });
  for (auto& g : node_.resources.generic) std::sort(g.names.begin(), g.names.end());
  available_milli_cpu_ = node_.resources.milli_cpu - used_cpu;
  available_memory_bytes_ = node_.resources.memory_bytes - used_memory;
  available_generic_ = node_.resources.generic;
  for (auto& g : available_generic_) {
    auto total = std::find_if(old_total.begin(), old_total.end(),
                              [&](const auto& o) { return o.kind == g.kind; });
    auto avail = std::find_if(old_available.begin(), old_available.end(),
                              [&](const auto& o) { return o.kind == g.kind; });
    if (total == old_total.end() || avail == old_available.end()) continue;
    if (!g.named) {
      g.count -= total->count - avail->count;
    } else {
      // Names still held by tasks stay taken.
      std::erase_if(g.names, [&](const std::string& name) {
        return std::binary_search(total->names.begin(), total->names.end(), name) &&
               !std::binary_search(avail->names.begin(), avail->names.end(), name);
      });
    }
  }
}

const NodeGenericResource* NodeInfo::FindGeneric(std::string_view kind) const {
  for (const auto& g : available_generic_)
    if (g.kind == kind) return &g;
  return nullptr;
}

NodeGenericResource* NodeInfo::FindGeneric(std::string_view kind) {
  return const_cast<NodeGenericResource*>(std::as_const(*this).FindGeneric(kind));
}

bool NodeInfo::HasGeneric(std::string_view kind, int64_t count) const {
  const NodeGenericResource* g = FindGeneric(kind);
  if (g == nullptr) return false;
  if (g->named) return !g->names.empty() && count <= static_cast<int64_t>(g->names.size());
  return count <= g->count;
}

bool NodeInfo::PortInUse(uint32_t port_key) const {
  return std::binary_search(used_ports_.begin(), used_ports_.end(), port_key);
}

uint32_t NodeInfo::PortUses(uint32_t port_key) const {
  auto [first, last] = std::equal_range(used_ports_.begin(), used_ports_.end(), port_key);
  return static_cast<uint32_t>(last - first);
}

uint32_t NodeInfo::ActiveTasksOf(ServiceIndex service) const {
  auto it = std::lower_bound(active_by_service_.begin(), active_by_service_.end(),
                             std::make_pair(service, uint32_t{0}));
  return it != active_by_service_.end() && it->first == service ? it->second : 0;
}

void NodeInfo::Reserve(const TaskSpec& spec, std::vector<GenericClaim>* claims) {
  available_milli_cpu_ -= spec.reservations.milli_cpu;
  available_memory_bytes_ -= spec.reservations.memory_bytes;
  for (const GenericRequest& request : spec.reservations.generic) {
    NodeGenericResource* g = FindGeneric(request.kind);
    if (g == nullptr) continue;
    if (!g->named) {
      g->count -= request.count;
      continue;
    }
    int64_t take = std::min<int64_t>(request.count, static_cast<int64_t>(g->names.size()));
    for (int64_t i = 0; i < take; ++i) claims->push_back({g->kind, std::move(g->names[i])});
    g->names.erase(g->names.begin(), g->names.begin() + take);
  }
  for (const PortSpec& port : spec.ports) {
    if (!port.OccupiesHostPort()) continue;
    used_ports_.insert(std::upper_bound(used_ports_.begin(), used_ports_.end(), port.Key()),
                       port.Key());
  }
}

void NodeInfo::Release(const TaskSpec& spec, const std::vector<GenericClaim>& claims) {
  available_milli_cpu_ += spec.reservations.milli_cpu;
  available_memory_bytes_ += spec.reservations.memory_bytes;
  for (const GenericRequest& request : spec.reservations.generic) {
    NodeGenericResource* g = FindGeneric(request.kind);
    if (g != nullptr && !g->named) g->count += request.count;
  }
  for (const GenericClaim& claim : claims) {
    NodeGenericResource* g = FindGeneric(claim.kind);
    if (g == nullptr) continue;
    g->names.insert(std::lower_bound(g->names.begin(), g->names.end(), claim.name), claim.name);
  }
  for (const PortSpec& port : spec.ports) {
    if (!port.OccupiesHostPort()) continue;
    auto it = std::lower_bound(used_ports_.begin(), used_ports_.end(), port.Key());
    if (it != used_ports_.end() && *it == port.Key()) used_ports_.erase(it);
  }
}

void NodeInfo::AddActive(ServiceIndex service) {
  ++active_tasks_;
  auto it = std::lower_bound(active_by_service_.begin(), active_by_service_.end(),
                             std::make_pair(service, uint32_t{0}));
  if (it != active_by_service_.end() && it->first == service) {
    ++it->second;
  } else {
    active_by_service_.insert(it, {service, 1});
  }
}

void NodeInfo::RemoveActive(ServiceIndex service) {
  auto it = std::lower_bound(active_by_service_.begin(), active_by_service_.end(),
                             std::make_pair(service, uint32_t{0}));
  if (it == active_by_service_.end() || it->first != service) return;
  --active_tasks_;
  if (--it->second == 0) active_by_service_.erase(it);
}

}  // namespace berth
