#include "fairshare/task_choice.h"

#include <algorithm>

namespace berth::fairshare {
namespace {

// Heap order over a job's waiting tasks: true when task a comes after task b.
struct LaterTask {
  const Job* job;
  bool operator()(uint32_t a, uint32_t b) const {
    const auto& da = job->waiting[a].expected_duration;
    const auto& db = job->waiting[b].expected_duration;
    if (da.has_value() != db.has_value()) return !da.has_value();  // unknown after known
    if (da && *da != *db) return *da < *db;                       // longer first
    return a > b;                                                  // then job order
  }
};

// The waiting tasks of one job, handed out longest expected duration first.
// Built the first time the job is picked: in job order when no duration is
// known (no work), else a heap, so a job of a million tasks that starts three
// costs O(n + 3 log n), not a sort.
class JobQueue {
 public:
  explicit JobQueue(const Job& job) : job_(job) {
    for (const WaitingTask& t : job.waiting) known_ |= t.expected_duration.has_value();
    if (!known_) return;
    heap_.resize(job.waiting.size());
    for (uint32_t i = 0; i < heap_.size(); ++i) heap_[i] = i;
    std::make_heap(heap_.begin(), heap_.end(), LaterTask{&job_});
  }
  bool empty() const { return next_ == job_.waiting.size(); }
  uint32_t Pop() {
    ++next_;
    if (!known_) return next_ - 1;
    std::pop_heap(heap_.begin(), heap_.end(), LaterTask{&job_});
    uint32_t task = heap_.back();
    heap_.pop_back();
    return task;
  }

 private:
  const Job& job_;
  bool known_ = false;
  uint32_t next_ = 0;
  std::vector<uint32_t> heap_;
};

}  // namespace

void ChooseStarts(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                  std::vector<TaskRef>* out) {
  if (count <= 0) return;
  // Jobs with waiting tasks by (running count, arrival); a stable sort keeps arrival order.
  std::vector<uint32_t> fresh;
  for (uint32_t j : class_jobs)
    if (!jobs[j].waiting.empty()) fresh.push_back(j);
  std::stable_sort(fresh.begin(), fresh.end(), [&](uint32_t a, uint32_t b) {
    return jobs[a].running.size() < jobs[b].running.size();
  });
  std::vector<JobQueue> queues;
  queues.reserve(fresh.size());
  std::vector<uint32_t> queue_of(jobs.size(), UINT32_MAX);  // job -> its queue, once picked
  std::vector<uint32_t> group, carried;  // carried: jobs moving up to group level + 1
  size_t next = 0;                       // the first job of `fresh` not yet in a group
  uint64_t level = 0;
  while (count > 0 && (next < fresh.size() || !carried.empty())) {
    // Fresh jobs sit at their running count (>= level + 1 by now); carried
    // jobs at level + 1, after the fresh ones of that level.
    const uint64_t fresh_level = next < fresh.size() ? jobs[fresh[next]].running.size() : UINT64_MAX;
    level = carried.empty() ? fresh_level : std::min<uint64_t>(level + 1, fresh_level);
    group.clear();
    while (next < fresh.size() && jobs[fresh[next]].running.size() == level)
      group.push_back(fresh[next++]);
    group.insert(group.end(), carried.begin(), carried.end());
    carried.clear();
    for (uint32_t j : group) {
      if (count == 0) return;
      if (queue_of[j] == UINT32_MAX) {
        queue_of[j] = static_cast<uint32_t>(queues.size());
        queues.emplace_back(jobs[j]);
      }
      JobQueue& queue = queues[queue_of[j]];
      out->push_back({j, queue.Pop()});
      --count;
      if (!queue.empty()) carried.push_back(j);
    }
  }
}

void ChooseStops(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                 std::vector<TaskRef>* out) {
  if (count <= 0) return;
  std::vector<TaskRef> running;
  for (uint32_t j : class_jobs)
    for (uint32_t t = 0; t < jobs[j].running.size(); ++t) running.push_back({j, t});
  auto newer = [&](const TaskRef& a, const TaskRef& b) {
    const Timestamp ta = jobs[a.job].running[a.task].started_at;
    const Timestamp tb = jobs[b.job].running[b.task].started_at;
    if (ta != tb) return ta > tb;
    return a.job != b.job ? a.job < b.job : a.task < b.task;
  };
  const size_t k = std::min<size_t>(static_cast<size_t>(count), running.size());
  std::partial_sort(running.begin(), running.begin() + static_cast<std::ptrdiff_t>(k),
                    running.end(), newer);
  out->insert(out->end(), running.begin(), running.begin() + static_cast<std::ptrdiff_t>(k));
}

void ChooseTasks(std::span<const Job> jobs, std::span<const ClassIndex> job_class,
                 IterationResult& result) {
  std::vector<std::vector<uint32_t>> class_jobs(result.start.size());
  for (uint32_t j = 0; j < jobs.size(); ++j) class_jobs[job_class[j]].push_back(j);
  for (size_t c = 0; c < class_jobs.size(); ++c) {
    ChooseStarts(jobs, class_jobs[c], result.start[c], &result.start_tasks);
    ChooseStops(jobs, class_jobs[c], result.stop[c], &result.stop_tasks);
  }
}

}  // namespace berth::fairshare
