#include "daemon/loop/full_view.h"

#include <algorithm>

#include "api/cluster_codec.h"
#include "placement/rebalance_target.h"

namespace berth::daemon {
namespace {

// A stored task's updated_at; the epoch when absent, as a document's.
Timestamp UpdatedAt(const TaskEntry& e) { return e.task.updated_at.value_or(Timestamp{}); }

}  // namespace

Status FullView::Load(StoredState& state) {
  state_ = placement::ClusterState();
  entry_of_.clear();
  ++generation_;
  layout_generation_ = state.layout_generation();
  for (const auto& [id, node] : state.nodes()) BERTH_RETURN_IF_ERROR(PutNode(state, id));
  return Status::Ok();
}

Status FullView::PutNode(const StoredState& state, const std::string& id) {
  const auto stored = state.nodes().find(id);
  if (stored == state.nodes().end()) return Status::Ok();  // removed since (a reload follows)
  const StoredNode& node = stored->second;
  Status status = node.error.empty() ? Status::Ok() : Status::InvalidArgument(node.error);
  if (status.ok()) {
    if (const std::optional<placement::NodeIndex> index = state_.FindNode(id))
      state_.UpdateNode(*index, node.node);
    else
      status = state_.AddNode(node.node).status();
  }
  if (!status.ok())
    return Status::Internal("the stored node is not a valid node: " + status.message());
  return Status::Ok();
}

Status FullView::Sync(StoredState& state, const std::vector<std::string>& changed_nodes,
                      const std::vector<uint32_t>& positions, const Planned& planned,
                      const SpecOf& spec_of, const std::function<bool(const TaskEntry&)>& global) {
  const size_t live = state_.task_count() - state_.forgotten_count();
  if (generation_ == 0 || state.layout_generation() != layout_generation_ ||
      state_.forgotten_count() > live + 1024) {
    BERTH_RETURN_IF_ERROR(Load(state));
    state_.ReserveTasks(state.tasks().size());
    for (size_t position = 0; position < state.tasks().size(); ++position)
      BERTH_RETURN_IF_ERROR(SyncEntry(state.task(position), position, planned, spec_of, global));
    return Status::Ok();
  }
  for (const std::string& id : changed_nodes) BERTH_RETURN_IF_ERROR(PutNode(state, id));
  size_t added = 0;  // at most: a changed task may be forgotten and added again
  for (uint32_t position : positions) {
    const TaskEntry& e = state.task(position);
    added += e.engine_generation != generation_ || e.engine_index == TaskEntry::kNotInEngine;
  }
  state_.ReserveTasks(state_.task_count() + added);
  for (uint32_t position : positions)
    BERTH_RETURN_IF_ERROR(SyncEntry(state.task(position), position, planned, spec_of, global));
  return Status::Ok();
}

Status FullView::SyncEntry(TaskEntry& e, size_t position, const Planned& planned,
                           const SpecOf& spec_of,
                           const std::function<bool(const TaskEntry&)>& global) {
  const bool seen = e.engine_generation == generation_;
  if (!seen) {
    e.engine_generation = generation_;
    e.engine_index = TaskEntry::kNotInEngine;
  }
  const bool want = e.live() && planned(e);
  if (e.engine_index != TaskEntry::kNotInEngine) {
    const placement::TaskRecord& record = state_.task(e.engine_index);
    if (want && SameTask(e, record)) {
      if (record.state != e.task.state)
        BERTH_RETURN_IF_ERROR(state_.SetTaskState(e.engine_index, e.task.state, UpdatedAt(e)));
      if (e.terminal())
        Forget(e);
      else
        entry_of_[e.engine_index] = position;
      return Status::Ok();
    }
    Forget(e);
  } else if (seen && e.terminal()) {
    return Status::Ok();  // its failure, if any, is recorded already
  }
  if (!want) return Status::Ok();
  BERTH_RETURN_IF_ERROR(Add(e, position, spec_of, global(e)));
  if (e.terminal()) Forget(e);  // it leaves only its failure
  return Status::Ok();
}

bool FullView::SameTask(const TaskEntry& e, const placement::TaskRecord& record) const {
  if (record.desired_state != e.task.desired ||
      record.spec_version != e.task.spec_version.value_or(0))
    return false;
  return record.node == placement::kNoNode ? e.task.node.empty()
                                           : NodeId(record.node) == e.task.node;
}

Status FullView::Add(TaskEntry& e, size_t position, const SpecOf& spec_of, bool global) {
  Task task;
  task.id = e.task.id;
  task.service_id = e.task.service;
  if (!e.task.service.empty()) task.spec_version = e.task.spec_version.value_or(0);
  task.node_id = e.task.node;
  task.state = e.task.state;
  task.desired_state = e.task.desired;
  task.updated_at = UpdatedAt(e);
  task.spec = spec_of(e);
  if (task.spec == nullptr)
    return Status::Internal("task '" + task.id + "' has no valid task template");
  Result<placement::TaskIndex> added = state_.AddTask(task, global);
  if (!added.ok())
    return Status::Internal("the stored task is not a valid task: " + added.status().message());
  e.engine_index = *added;
  if (entry_of_.size() <= *added) entry_of_.resize(*added + 1);
  entry_of_[*added] = position;
  return Status::Ok();
}

void FullView::Forget(TaskEntry& e) {
  state_.ForgetTask(e.engine_index);
  e.engine_index = TaskEntry::kNotInEngine;
}

FullView::Moves FullView::RebalanceMoves(const std::string& service,
                                         const std::shared_ptr<const TaskSpec>& spec,
                                         uint64_t version, uint64_t replicas, Timestamp now) const {
  const std::optional<ServiceIndex> index = state_.FindService(service);
  if (!index) return {};  // the engine holds none of its tasks
  const std::vector<uint32_t> target =
      placement::RebalanceTarget(state_, *index, service, spec, version, replicas, options_, now);
  Moves moves;
  uint64_t room = 0;
  for (placement::NodeIndex n = 0; n < state_.node_count(); ++n)
    if (const uint32_t holds = state_.node(n).ActiveTasksOf(*index); target[n] > holds) {
      moves.to[NodeId(n)] = target[n] - holds;
      room += target[n] - holds;
    }
  for (placement::NodeIndex n = 0; n < state_.node_count() && room > 0; ++n)
    if (const uint32_t holds = state_.node(n).ActiveTasksOf(*index); holds > target[n]) {
      const auto leaving = static_cast<uint32_t>(std::min<uint64_t>(holds - target[n], room));
      moves.from[NodeId(n)] = leaving;
      room -= leaving;
    }
  return moves;
}

placement::PassResult FullView::Schedule(Timestamp now) {
  placement::Scheduler scheduler(state_, options_);
  placement::PassResult result = scheduler.SchedulePending(now);
  for (std::chrono::nanoseconds took : result.group_durations) group_durations_.Observe(took);
  return result;
}

}  // namespace berth::daemon
