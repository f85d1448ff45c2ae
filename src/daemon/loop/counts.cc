#include "daemon/loop/counts.h"

#include <algorithm>

#include "daemon/loop/agent_placement.h"
#include "placement/scheduler.h"

namespace berth::daemon {
namespace {

int8_t ReasonOf(const CountedTask& task) {
  if (task.state > TaskState::kPending || !task.runnable) return -1;
  PendingReason reason = PendingReason::kScheduling;
  if (task.has_restart_delay)
    reason = PendingReason::kRestartDelay;
  else if (task.waiting_admission)
    reason = PendingReason::kAdmission;
  else if (task.message.starts_with(placement::kNoSuitableNodeMessage))
    reason = PendingReason::kNoSuitableNode;
  else if (task.message.starts_with(kNoAgentMessage))
    reason = PendingReason::kAgent;
  return static_cast<int8_t>(reason);
}

template <class T>
void Bump(T& count, int sign) {
  count = static_cast<T>(static_cast<int64_t>(count) + sign);
}

}  // namespace

std::string_view ToString(PendingReason reason) {
  switch (reason) {
    case PendingReason::kScheduling:
      return "scheduling";
    case PendingReason::kNoSuitableNode:
      return "no_suitable_node";
    case PendingReason::kRestartDelay:
      return "restart_delay";
    case PendingReason::kAdmission:
      return "admission";
    case PendingReason::kAgent:
      return "agent";
  }
  return "scheduling";
}

template <class Row>
Row& CowTable<Row>::Edit(uint32_t i) {
  const uint32_t c = i / kChunkRows;
  if (shared_[c]) {
    chunks_[c] = std::make_shared<Chunk>(*chunks_[c]);
    shared_[c] = false;
  }
  published_.reset();
  return (*chunks_[c])[i % kChunkRows];
}

template <class Row>
uint32_t CowTable<Row>::Add() {
  if (!free_.empty()) {
    const uint32_t i = free_.back();
    free_.pop_back();
    return i;
  }
  const auto used = static_cast<uint32_t>(chunks_.size() * kChunkRows - spare_);
  if (spare_ == 0) {
    chunks_.push_back(std::make_shared<Chunk>(kChunkRows));
    shared_.push_back(false);
    spare_ = kChunkRows;
    published_.reset();
  }
  --spare_;
  return used;
}

template <class Row>
void CowTable<Row>::Free(uint32_t i) {
  Edit(i) = Row();
  free_.push_back(i);
}

template <class Row>
std::shared_ptr<const typename CowTable<Row>::Chunks> CowTable<Row>::Publish() {
  if (published_) return published_;
  auto chunks = std::make_shared<Chunks>(chunks_.begin(), chunks_.end());
  std::fill(shared_.begin(), shared_.end(), true);
  published_ = std::move(chunks);
  return published_;
}

template class CowTable<NodeRow>;
template class CowTable<OwnerRow>;

uint64_t OwnerRow::Waiting() const {
  uint64_t waiting = 0;
  for (uint64_t n : pending_by_reason) waiting += n;
  return waiting;
}

uint64_t OwnerRow::RunningCurrent() const {
  uint64_t running = 0;
  for (const auto& [version, count] : running_by_version)
    if (templates.RunsCurrent(version)) running += count;
  return running;
}

const NodeRow* CountsSnapshot::FindNode(std::string_view id) const {
  const NodeRow* found = nullptr;
  ForEachNode([&](const NodeRow& row) {
    if (row.id == id) found = &row;
  });
  return found;
}

const OwnerRow* CountsSnapshot::FindService(std::string_view id) const {
  const OwnerRow* found = nullptr;
  ForEachOwner([&](const OwnerRow& row) {
    if (!row.job && row.id == id) found = &row;
  });
  return found;
}

uint32_t LoopCounts::NodeRowOf(std::string_view id) {
  if (auto it = node_rows_.find(id); it != node_rows_.end()) return it->second;
  const uint32_t row = nodes_.Add();
  nodes_.Edit(row).id = std::string(id);
  node_rows_.emplace(std::string(id), row);
  return row;
}

uint32_t LoopCounts::OwnerRowOf(std::string_view id, bool job) {
  Index& index = job ? job_rows_ : service_rows_;
  if (auto it = index.find(id); it != index.end()) return it->second;
  const uint32_t row = owners_.Add();
  OwnerRow& r = owners_.Edit(row);
  r.id = std::string(id);
  r.job = job;
  index.emplace(std::string(id), row);
  return row;
}

void LoopCounts::ReleaseNodeIfUnused(uint32_t row) {
  const NodeRow& r = nodes_[row];
  if (r.stored || r.tasks != 0) return;
  node_rows_.erase(r.id);
  nodes_.Free(row);
}

void LoopCounts::ReleaseOwnerIfUnused(uint32_t row) {
  const OwnerRow& r = owners_[row];
  if (r.stored || r.counted != 0) return;
  (r.job ? job_rows_ : service_rows_).erase(r.id);
  owners_.Free(row);
}

void LoopCounts::PutNode(const std::string& id, std::shared_ptr<const Node> node,
                         std::string error) {
  NodeRow& row = nodes_.Edit(NodeRowOf(id));
  row.stored = true;
  row.node = std::move(node);
  row.error = std::move(error);
}

void LoopCounts::RemoveNode(const std::string& id) {
  const auto it = node_rows_.find(id);
  if (it == node_rows_.end()) return;
  const uint32_t row = it->second;
  NodeRow& r = nodes_.Edit(row);
  r.stored = false;
  r.node.reset();
  r.error.clear();
  ReleaseNodeIfUnused(row);
}

void LoopCounts::PutService(const std::string& id, const ServiceFields& fields) {
  OwnerRow& row = owners_.Edit(OwnerRowOf(id, false));
  row.stored = true;
  row.replicas = fields.replicas;
  row.spec_version = fields.spec_version;
  row.templates = fields.templates;
}

void LoopCounts::RemoveService(const std::string& id) {
  const auto it = service_rows_.find(id);
  if (it == service_rows_.end()) return;
  const uint32_t row = it->second;
  OwnerRow& r = owners_.Edit(row);
  r.stored = false;
  r.rollout_state.clear();
  r.rollout_message.clear();
  ReleaseOwnerIfUnused(row);
}

void LoopCounts::SetRollout(const std::string& service, const std::string& state,
                            const std::string& message) {
  const auto it = service_rows_.find(service);
  if (it == service_rows_.end()) return;
  const OwnerRow& r = owners_[it->second];
  if (r.rollout_state == state && r.rollout_message == message) return;
  OwnerRow& row = owners_.Edit(it->second);
  row.rollout_state = state;
  row.rollout_message = message;
}

void LoopCounts::PutJob(const std::string& id, const std::string& requestor, int64_t tasks,
                        bool killed) {
  OwnerRow& row = owners_.Edit(OwnerRowOf(id, true));
  row.stored = true;
  row.requestor = requestor;
  row.job_tasks = tasks;
  row.killed = killed;
}

void LoopCounts::RemoveJob(const std::string& id) {
  const auto it = job_rows_.find(id);
  if (it == job_rows_.end()) return;
  const uint32_t row = it->second;
  owners_.Edit(row).stored = false;
  ReleaseOwnerIfUnused(row);
}

void LoopCounts::Count(const CountedTask& task, CountedAs& counted) {
  CountedAs next;
  next.in = true;
  next.state = task.state;
  next.reason = ReasonOf(task);
  next.running = task.state == TaskState::kRunning && task.desired != TaskState::kShutdown;
  next.runnable = task.runnable;
  next.version = task.version;
  const bool job = !task.job.empty();
  const std::string_view owner = job ? task.job : task.service;
  if (!owner.empty())
    next.owner = counted.owner != CountedAs::kNone && owners_[counted.owner].job == job &&
                         owners_[counted.owner].id == owner
                     ? counted.owner
                     : OwnerRowOf(owner, job);
  if (HoldsReservations(task.state, task.node)) {
    next.node = counted.node != CountedAs::kNone && nodes_[counted.node].id == task.node
                    ? counted.node
                    : NodeRowOf(task.node);
    next.spec = task.spec;
  }
  if (next.reason >= 0 && next.owner != CountedAs::kNone &&
      owners_[next.owner].pending_message != task.message)
    owners_.Edit(next.owner).pending_message = std::string(task.message);
  if (next == counted) return;
  // Most edits move a task's state on the same node (assigned, running):
  // its node's counts stay as they are.
  const bool node_moves =
      next.node != counted.node || next.spec != counted.spec || next.owner != counted.owner;
  Add(next, 1, node_moves);  // before the old counts leave: no row `next` uses is freed
  if (counted.in) Remove(counted, node_moves);
  counted = std::move(next);
}

void LoopCounts::Uncount(CountedAs& counted) {
  if (!counted.in) return;
  Remove(counted, true);
  counted = CountedAs();
}

void LoopCounts::Remove(const CountedAs& c, bool with_node) {
  Add(c, -1, with_node);
  if (c.owner != CountedAs::kNone) ReleaseOwnerIfUnused(c.owner);
  if (with_node && c.node != CountedAs::kNone) ReleaseNodeIfUnused(c.node);
}

void LoopCounts::Add(const CountedAs& c, int sign, bool with_node) {
  const auto state = static_cast<size_t>(c.state);
  Bump(tasks_by_state_[state], sign);
  if (c.reason >= 0) Bump(pending_by_reason_[static_cast<size_t>(c.reason)], sign);
  if (c.owner != CountedAs::kNone) {
    OwnerRow& row = owners_.Edit(c.owner);
    Bump(row.counted, sign);
    Bump(row.by_state[state], sign);
    if (c.runnable) Bump(row.runnable, sign);
    if (c.reason >= 0) {
      Bump(row.pending_by_reason[static_cast<size_t>(c.reason)], sign);
      if (row.Waiting() == 0) row.pending_message.clear();  // no task waits: no reason
    }
    if (c.running) {
      auto& versions = row.running_by_version;
      auto it = std::find_if(versions.begin(), versions.end(),
                             [&](const auto& v) { return v.first == c.version; });
      if (it == versions.end()) it = versions.insert(versions.end(), {c.version, 0});
      Bump(it->second, sign);
      if (it->second == 0) versions.erase(it);
    }
  }
  if (with_node && c.node != CountedAs::kNone) AddToNode(c, sign);
}

void LoopCounts::AddToNode(const CountedAs& c, int sign) {
  NodeRow& row = nodes_.Edit(c.node);
  Bump(row.tasks, sign);
  if (c.spec) {
    const Reservations& r = c.spec->reservations;
    row.milli_cpu += sign * r.milli_cpu;
    row.memory_bytes += sign * r.memory_bytes;
    for (const GenericRequest& g : r.generic) {
      auto it = std::find_if(row.generic.begin(), row.generic.end(),
                             [&](const GenericRequest& h) { return h.kind == g.kind; });
      if (it == row.generic.end()) it = row.generic.insert(row.generic.end(), {g.kind, 0});
      it->count += sign * g.count;
      if (it->count == 0) row.generic.erase(it);
    }
  }
  if (c.owner == CountedAs::kNone) return;
  const OwnerRow& owner = owners_[c.owner];
  auto it = std::find_if(row.owners.begin(), row.owners.end(), [&](const NodeRow::Owner& o) {
    return o.job == owner.job && o.id == owner.id;
  });
  if (it == row.owners.end()) it = row.owners.insert(row.owners.end(), {owner.id, owner.job, 0});
  Bump(it->tasks, sign);
  if (it->tasks == 0) row.owners.erase(it);
}

std::shared_ptr<const CountsSnapshot> LoopCounts::Publish(int64_t revision,
                                                          const std::string& admission) {
  auto snapshot = std::make_shared<CountsSnapshot>();
  snapshot->revision = revision;
  snapshot->tasks_by_state = tasks_by_state_;
  snapshot->pending_by_reason = pending_by_reason_;
  snapshot->nodes = nodes_.Publish();
  snapshot->owners = owners_.Publish();
  snapshot->admission = admission;
  return snapshot;
}

}  // namespace berth::daemon
