#include "daemon/loop/steps/admission.h"

#include <algorithm>
#include <vector>

#include "daemon/loop/steps/jobs.h"

namespace berth::daemon {

using api::Json;

void JobAdmission::Admit(fairshare::Admission& admission) {
  // Jobs in arrival order: by the revision of their last write (a killed
  // job moves, but it is skipped), then by id: jobs submitted together on
  // etcd may share a revision (group commit), and every replica must
  // order them alike.
  std::vector<std::pair<int64_t, const std::string*>> arrival;
  for (const auto& [id, stored] : pass_.jobs())
    if (!stored.killed) arrival.emplace_back(stored.revision, &id);
  std::sort(arrival.begin(), arrival.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  std::vector<fairshare::Job> jobs;
  std::vector<std::vector<TaskEntry*>> running, waiting;
  for (const auto& [revision, id] : arrival) {
    const StoredJob& job = pass_.jobs().at(*id);
    fairshare::Job j{*id, job.requestor, {}, {}};
    std::vector<TaskEntry*> r, w;
    for (int64_t i = 1; i <= job.tasks; ++i) {
      TaskEntry* entry = pass_.FindTask(*id + "." + std::to_string(i));
      if (entry == nullptr) continue;
      TaskEntry& e = *entry;
      if (e.task.state == TaskState::kNew) {
        w.push_back(&e);
      } else if (!e.terminal()) {
        r.push_back(&e);
        j.running.push_back({e.task.id, e.task.admitted_at.value_or(pass_.now())});
      }
    }
    // Waiting tasks in choice order: longest expected duration first.
    std::stable_sort(w.begin(), w.end(), [&](const TaskEntry* a, const TaskEntry* b) {
      const auto da = ExpectedDuration(*a), db = ExpectedDuration(*b);
      return da.has_value() && (!db.has_value() || *da > *db);
    });
    for (TaskEntry* e : w) j.waiting.push_back({e->task.id, ExpectedDuration(*e)});
    jobs.push_back(std::move(j));
    running.push_back(std::move(r));
    waiting.push_back(std::move(w));
  }
  const fairshare::IterationResult result = admission.Iterate(workers_, jobs, pass_.now());
  if (!jobs.empty()) Explain(admission.config(), result);
  for (const fairshare::TaskRef& ref : result.start_tasks) {
    TaskEntry& e = *waiting[ref.job][ref.task];
    pass_.SetInPlan(e, true);
    pass_.SetState(e, TaskState::kPending,
                   "admitted for requestor '" + jobs[ref.job].requestor + "'" + RetryNote(e));
    e.task.admitted_at = pass_.now();
    ++pass_.summary.admitted;
  }
  for (const fairshare::TaskRef& ref : result.stop_tasks) {
    pass_.Requeue(*running[ref.job][ref.task], "preempted by rebalance; waiting again");
    ++pass_.summary.stopped;
  }
}

// A retried task says which retry it runs (steps/jobs.h): its failure's
// message is replaced by this one in the same pass when a worker is free.
std::string JobAdmission::RetryNote(const TaskEntry& e) const {
  if (e.task.retries == 0) return "";
  const auto job = pass_.jobs().find(e.task.job);
  const int64_t of = job == pass_.jobs().end() ? e.task.retries : job->second.max_retries;
  return "; retry " + std::to_string(e.task.retries) + " of " + std::to_string(of);
}

void JobAdmission::Explain(const fairshare::Config& config,
                           const fairshare::IterationResult& result) {
  Json classes = Json::object();
  for (size_t c = 0; c < result.target.size(); ++c) {
    const auto index = static_cast<fairshare::ClassIndex>(c);
    classes[config.ClassName(index)] = {{"percent", config.Percent(index)},
                                        {"entitlement", result.target[c]},
                                        {"running", result.running[c]},
                                        {"waiting", result.waiting[c]},
                                        {"starting", result.start[c] - result.stop[c]}};
  }
  std::string status =
      Json{{"workers", workers_}, {"idle", result.idle}, {"classes", classes}}.dump();
  pass_.SetAdmissionStatus(std::move(status));
}

std::optional<Duration> JobAdmission::ExpectedDuration(const TaskEntry& e) const {
  const Recorded* recorded = pass_.FindDuration(DurationName(e));
  if (recorded == nullptr || recorded->count == 0) return std::nullopt;
  return std::chrono::milliseconds(recorded->total_ms / recorded->count);
}

}  // namespace berth::daemon
