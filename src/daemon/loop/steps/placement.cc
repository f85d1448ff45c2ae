#include "daemon/loop/steps/placement.h"

namespace berth::daemon {

Status Placement::Place(FullView& engine) {
  replicas_.Generate();
  global_.OnNodes();
  std::vector<uint32_t> sync = pass_.visit();
  sync.insert(sync.end(), pass_.touched().begin(), pass_.touched().end());
  BERTH_RETURN_IF_ERROR(engine.Sync(
      state_, pass_.changed_nodes(), sync, [](const TaskEntry& e) { return e.planned(); },
      [this](const TaskEntry& e) { return pass_.SpecOf(e); },
      [this](const TaskEntry& e) {
        const auto it = pass_.FindService(e.task.service);
        return it != pass_.services().end() && !it->second.replicas.has_value();
      }));
  const placement::PassResult result = engine.Schedule(pass_.now());
  rebalance_.ChooseAllMovers(engine);
  rebalance_.OnJoin(engine, state_.TakeNodesJoined());
  Apply(result, engine);
  return Status::Ok();
}

void Placement::Apply(const placement::PassResult& result, const FullView& engine) {
  pass_.summary.pending += static_cast<int>(result.unchanged);
  for (const placement::Decision& d : result.decisions) {
    const size_t position = engine.EntryOf(d.task);
    TaskEntry& e = pass_.task(position);
    if (d.node != placement::kNoNode) {
      e.task.node = engine.NodeId(d.node);
      pass_.SetState(e, TaskState::kAssigned, result.MessageOf(d));
      pass_.Assigned(position);
      continue;
    }
    ++pass_.summary.pending;
    const std::string& reason = result.MessageOf(d);
    if (e.task.message == reason) continue;
    e.task.message = reason;
    if (!e.task.updated_at) e.task.updated_at = pass_.now();
    pass_.MarkChanged(e);
  }
}

}  // namespace berth::daemon
