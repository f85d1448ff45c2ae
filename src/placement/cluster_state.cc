#include "placement/cluster_state.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <random>

#include "core/id_order.h"

namespace berth::placement {

bool ClusterState::IsTracked(const TaskRecord& t) {
  return t.node != kNoNode && t.state > TaskState::kPending && t.state <= TaskState::kRunning;
}

bool ClusterState::IsActive(const TaskRecord& t) {
  return IsTracked(t) && t.desired_state <= TaskState::kComplete;
}

Result<NodeIndex> ClusterState::AddNode(Node node) {
  if (node.id.empty()) return Status::InvalidArgument("node id is empty");
  if (FindNode(node.id)) return Status::Conflict("node '" + node.id + "' already exists");
  NodeIndex index = static_cast<NodeIndex>(nodes_.size());
  nodes_.emplace_back(std::move(node));
  node_active_.push_back(0);
  node_by_id_.Insert(index, NodeIdOf());
  ranks_.clear();  // recomputed on demand
  ++capacity_epoch_;
  return index;
}

ServiceIndex ClusterState::InternService(std::string_view service_id) {
  auto it = service_by_id_.find(std::string(service_id));
  if (it != service_by_id_.end()) return it->second;
  ServiceIndex index = static_cast<ServiceIndex>(service_by_id_.size());
  service_by_id_.emplace(std::string(service_id), index);
  return index;
}

std::optional<ServiceIndex> ClusterState::FindService(std::string_view service_id) const {
  auto it = service_by_id_.find(std::string(service_id));
  if (it == service_by_id_.end()) return std::nullopt;
  return it->second;
}

Result<TaskIndex> ClusterState::AddTask(const Task& task, bool preassigned) {
  if (task.id.empty()) return Status::InvalidArgument("task id is empty");
  if (task.spec == nullptr) return Status::InvalidArgument("task '" + task.id + "' has no spec");
  if (FindTask(task.id)) return Status::Conflict("task '" + task.id + "' already exists");
  NodeIndex node = kNoNode;
  if (!task.node_id.empty()) {
    auto found = FindNode(task.node_id);
    if (!found)
      return Status::NotFound("task '" + task.id + "': node '" + task.node_id + "' not found");
    node = *found;
  }
  TaskIndex index = static_cast<TaskIndex>(tasks_.size());
  TaskRecord& t = tasks_.emplace_back();
  t.id = task.id;
  t.service = InternService(task.service_id);
  t.has_spec_version = task.spec_version.has_value();
  t.spec_version = task.spec_version.value_or(0);
  // A pending task with a node is preassigned whatever its service says.
  t.preassigned = preassigned || (task.state == TaskState::kPending && node != kNoNode);
  t.state = task.state;
  t.desired_state = task.desired_state;
  t.node = node;
  t.updated_at = task.updated_at;
  t.spec = task.spec;
  task_by_id_.Insert(index, TaskIdOf());
  if (IsPending(t)) pending_candidates_.push_back(index);
  if (IsTracked(t)) Track(t);
  if ((t.state == TaskState::kFailed || t.state == TaskState::kRejected) && t.node != kNoNode)
    RecordFailure(t, t.updated_at);
  return index;
}

void ClusterState::Track(TaskRecord& t) {
  ++capacity_epoch_;
  NodeInfo& node = nodes_[t.node];
  node.Reserve(*t.spec, &t.claims);
  if (t.desired_state <= TaskState::kComplete) {
    node.AddActive(t.service);
    ++node_active_[t.node];
    if (active_by_service_.size() <= t.service) active_by_service_.resize(t.service + 1);
    ++active_by_service_[t.service];
  }
}

void ClusterState::Untrack(const TaskRecord& t) {
  ++capacity_epoch_;
  NodeInfo& node = nodes_[t.node];
  node.Release(*t.spec, t.claims);
  if (t.desired_state <= TaskState::kComplete) {
    node.RemoveActive(t.service);
    --node_active_[t.node];
    --active_by_service_[t.service];
  }
}

Status ClusterState::SetTaskState(TaskIndex index, TaskState state, Timestamp at) {
  if (index >= tasks_.size())
    return Status::NotFound("no task with index " + std::to_string(index));
  TaskRecord& t = tasks_[index];
  bool was_tracked = IsTracked(t);
  TaskState old = t.state;
  t.state = state;
  t.updated_at = at;
  if (IsPending(t)) pending_candidates_.push_back(index);
  bool tracked = IsTracked(t);
  if (was_tracked && !tracked) {
    t.state = old;  // untrack with the state the reservation was made under
    Untrack(t);
    t.claims.clear();
    t.state = state;
  } else if (!was_tracked && tracked) {
    Track(t);
  }
  if (state != old && (state == TaskState::kFailed || state == TaskState::kRejected) &&
      t.node != kNoNode)
    RecordFailure(t, at);
  return Status::Ok();
}

void ClusterState::Assign(TaskIndex index, NodeIndex node, Timestamp at) {
  TaskRecord& t = tasks_[index];
  t.node = node;
  t.state = TaskState::kAssigned;
  t.updated_at = at;
  Track(t);
}

void ClusterState::ForgetTask(TaskIndex index) {
  TaskRecord& t = tasks_[index];
  if (t.state == TaskState::kRemove && t.id.empty()) return;  // forgotten before
  if (IsTracked(t)) Untrack(t);
  task_by_id_.Erase(index, TaskIdOf());
  t = TaskRecord();
  t.state = TaskState::kRemove;
  ++forgotten_;
}

ClusterState ClusterState::WithoutTasksOf(ServiceIndex service,
                                          std::optional<uint64_t> seed) const {
  ClusterState out;
  out.nodes_ = nodes_;
  out.node_by_id_ = node_by_id_;
  out.service_by_id_ = service_by_id_;
  out.active_by_service_ = active_by_service_;
  out.node_active_ = node_active_;
  for (const TaskRecord& t : tasks_)
    if (t.service == service && IsTracked(t) && nodes_[t.node].ReadyForTasks()) out.Untrack(t);
  const std::vector<uint32_t> rank = out.Ranks(seed);
  std::vector<NodeIndex> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](NodeIndex n) {
    return std::pair(-int64_t{nodes_[n].ActiveTasksOf(service)}, rank[n]);
  };
  std::sort(order.begin(), order.end(), [&](NodeIndex a, NodeIndex b) { return key(a) < key(b); });
  for (uint32_t r = 0; r < order.size(); ++r) out.ranks_[order[r]] = r;
  return out;
}

void ClusterState::RecordFailure(const TaskRecord& t, Timestamp at) {
  // The scheduler did not choose a preassigned task's node, so its failures
  // say nothing about that choice.
  if (t.preassigned) return;
  failures_[FailureKey{t.service, t.spec_version}][t.node].push_back(at);
}

uint32_t ClusterState::RecentFailures(NodeIndex node, ServiceIndex service, uint64_t version,
                                      Timestamp since) const {
  auto by_key = failures_.find(FailureKey{service, version});
  if (by_key == failures_.end()) return 0;
  auto by_node = by_key->second.find(node);
  if (by_node == by_key->second.end()) return 0;
  return static_cast<uint32_t>(std::count_if(by_node->second.begin(), by_node->second.end(),
                                             [&](Timestamp t) { return t >= since; }));
}

std::vector<NodeIndex> ClusterState::NodesWithFailures(ServiceIndex service,
                                                       uint64_t version) const {
  std::vector<NodeIndex> nodes;
  auto by_key = failures_.find(FailureKey{service, version});
  if (by_key == failures_.end()) return nodes;
  for (const auto& [node, times] : by_key->second) nodes.push_back(node);
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

void ClusterState::ReserveTasks(size_t count) {
  if (count <= tasks_.capacity()) return;
  // A power of two, as push_back's doubling: room for what follows.
  count = std::bit_ceil(count);
  tasks_.reserve(count);
  task_by_id_.Reserve(count, TaskIdOf());
}

std::optional<NodeIndex> ClusterState::FindNode(std::string_view id) const {
  return node_by_id_.Find(id, NodeIdOf());
}

std::optional<TaskIndex> ClusterState::FindTask(std::string_view id) const {
  return task_by_id_.Find(id, TaskIdOf());
}

std::vector<TaskIndex> ClusterState::PendingTasks() {
  std::vector<TaskIndex>& c = pending_candidates_;
  std::erase_if(c, [&](TaskIndex i) { return !IsPending(tasks_[i]); });
  if (!std::is_sorted(c.begin(), c.end())) std::sort(c.begin(), c.end());
  c.erase(std::unique(c.begin(), c.end()), c.end());
  return c;
}

const std::vector<uint32_t>& ClusterState::Ranks(std::optional<uint64_t> seed) {
  if (ranks_.size() == nodes_.size() && ranks_seed_ == seed) return ranks_;
  std::vector<NodeIndex> order(nodes_.size());
  std::iota(order.begin(), order.end(), 0);
  if (seed) {
    std::mt19937_64 rng(*seed);
    std::shuffle(order.begin(), order.end(), rng);
  } else {
    SortByIds(order, NodeIdOf());
  }
  ranks_.assign(nodes_.size(), 0);
  for (uint32_t rank = 0; rank < order.size(); ++rank) ranks_[order[rank]] = rank;
  ranks_seed_ = seed;
  return ranks_;
}

}  // namespace berth::placement
