#include "daemon/loop/steps/replicas.h"

#include "orchestrator/orchestrator.h"

namespace berth::daemon {

void Replicas::Generate() {
  for (const std::string& id : pass_.DirtyServices()) {
    const auto svc = pass_.FindService(id);
    if (svc == pass_.services().end() || !svc->second.replicas) continue;
    const std::vector<uint64_t> slots =
        orchestrator::NewSlots(pass_.TallyOf(id), *svc->second.replicas);
    pass_.ReserveNewTasks(slots.size());
    for (uint64_t slot : slots) pass_.NewTask(id, svc->second.spec_version, slot, "");
  }
}

void Replicas::ScaleDown() {
  for (const std::string& id : pass_.DirtyServices()) {
    const auto svc = pass_.FindService(id);
    if (svc == pass_.services().end() || !svc->second.replicas) continue;
    const uint64_t replicas = *svc->second.replicas;
    const orchestrator::ServiceTally& tally = pass_.TallyOf(id);
    // Tasks a start-first update replaces share their slot with the new one.
    const ServiceUpdate* rollout = rollouts_.Find(id);
    const uint64_t keep = replicas + (rollout ? rollout->StartFirstPairs(pass_.tasks()) : 0);
    if (tally.runnable_count <= keep) continue;
    std::vector<TaskEntry*> stop;
    if (std::optional<std::vector<uint64_t>> numbers = orchestrator::ChooseScaleDown(tally, keep)) {
      for (uint64_t n : *numbers) stop.push_back(&pass_.task(tally.holder[n]));
    } else {
      std::vector<TaskEntry*> entries = RunnableTasksOf(id);
      std::vector<orchestrator::ScaleDownCandidate> candidates;
      for (const TaskEntry* e : entries)
        candidates.push_back({e->task.id, e->task.state == TaskState::kPending});
      for (size_t i : orchestrator::ChooseScaleDown(candidates, keep)) stop.push_back(entries[i]);
    }
    for (TaskEntry* e : stop) {
      pass_.SetState(*e, TaskState::kShutdown,
                     "scaled down to " + std::to_string(replicas) + " replicas", true);
      ++pass_.summary.stopped;
    }
  }
}

std::vector<TaskEntry*> Replicas::RunnableTasksOf(const std::string& service) {
  std::vector<TaskEntry*> entries;
  for (TaskEntry& e : pass_.tasks())
    if (e.task.service == service && e.planned() && e.runnable()) entries.push_back(&e);
  return entries;
}

}  // namespace berth::daemon
