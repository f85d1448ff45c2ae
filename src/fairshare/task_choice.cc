#include "fairshare/task_choice.h"

#include <algorithm>

namespace berth::fairshare {
namespace {

// Stable LSD radix sort of records by their `age` field, 11 bits a pass and
// only as many passes as the largest age needs: a class can stop tens of
// thousands of tasks in one rebalance, and a comparison sort of that many
// costs several milliseconds.
void SortByAge(std::vector<ChoiceScratch::Running>& records,
               std::vector<ChoiceScratch::Running>& buffer, std::vector<size_t>& start) {
  uint64_t max_age = 0;
  for (const auto& r : records) max_age = std::max(max_age, r.age);
  buffer.resize(records.size());
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t{1} << kBits;
  for (int shift = 0; shift < 64 && (max_age >> shift) != 0; shift += kBits) {
    start.assign(kBuckets + 1, 0);
    for (const auto& r : records) ++start[((r.age >> shift) & (kBuckets - 1)) + 1];
    for (size_t b = 1; b <= kBuckets; ++b) start[b] += start[b - 1];
    for (const auto& r : records) buffer[start[(r.age >> shift) & (kBuckets - 1)]++] = r;
    records.swap(buffer);
  }
}

}  // namespace

void OrderWaitingTasks(std::vector<WaitingTask>& waiting) {
  std::stable_sort(waiting.begin(), waiting.end(), [](const WaitingTask& a, const WaitingTask& b) {
    if (a.expected_duration.has_value() != b.expected_duration.has_value())
      return a.expected_duration.has_value();  // known before unknown
    return a.expected_duration && *a.expected_duration > *b.expected_duration;
  });
}

void ChooseStarts(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                  ChoiceScratch& scratch, std::vector<TaskRef>* out) {
  if (count <= 0) return;
  using Entry = ChoiceScratch::Entry;
  // Jobs with waiting tasks by (running count, arrival); a stable sort keeps arrival order.
  std::vector<Entry>& fresh = scratch.fresh;
  fresh.clear();
  for (uint32_t j : class_jobs)
    if (!jobs[j].waiting.empty()) fresh.push_back({j, 0});
  auto running = [&](const Entry& e) { return jobs[e.job].running.size(); };
  std::stable_sort(fresh.begin(), fresh.end(),
                   [&](const Entry& a, const Entry& b) { return running(a) < running(b); });
  std::vector<Entry>& group = scratch.group;
  std::vector<Entry>& carried = scratch.carried;  // jobs moving up to group level + 1
  carried.clear();
  size_t next = 0;                    // the first job of `fresh` not yet in a group
  uint64_t level = 0;
  while (count > 0 && (next < fresh.size() || !carried.empty())) {
    // Fresh jobs sit at their running count (>= level + 1 by now); carried
    // jobs at level + 1, after the fresh ones of that level.
    const uint64_t fresh_level = next < fresh.size() ? running(fresh[next]) : UINT64_MAX;
    level = carried.empty() ? fresh_level : std::min<uint64_t>(level + 1, fresh_level);
    group.clear();
    while (next < fresh.size() && running(fresh[next]) == level) group.push_back(fresh[next++]);
    group.insert(group.end(), carried.begin(), carried.end());
    carried.clear();
    for (Entry e : group) {
      if (count == 0) return;
      out->push_back({e.job, e.taken++});
      --count;
      if (e.taken < jobs[e.job].waiting.size()) carried.push_back(e);
    }
  }
}

void ChooseStops(std::span<const Job> jobs, std::span<const uint32_t> class_jobs, int64_t count,
                 ChoiceScratch& scratch, std::vector<TaskRef>* out) {
  if (count <= 0) return;
  // (age, task) records in (job, task) order; age = newest start - start, so
  // ascending age is newest first, and a stable sort keeps ties in job order.
  std::vector<ChoiceScratch::Running>& running = scratch.running;
  running.clear();
  Timestamp newest = Timestamp::min();
  for (uint32_t j : class_jobs) {
    for (const RunningTask& t : jobs[j].running) newest = std::max(newest, t.started_at);
  }
  for (uint32_t j : class_jobs)
    for (uint32_t t = 0; t < jobs[j].running.size(); ++t)
      running.push_back(
          {static_cast<uint64_t>((newest - jobs[j].running[t].started_at).count()), {j, t}});
  SortByAge(running, scratch.sorted, scratch.buckets);
  const size_t k = std::min<size_t>(static_cast<size_t>(count), running.size());
  for (size_t i = 0; i < k; ++i) out->push_back(running[i].task);
}

void ChooseTasks(std::span<const Job> jobs, std::span<const ClassIndex> job_class,
                 ChoiceScratch& scratch, IterationResult& result) {
  scratch.class_jobs.resize(result.start.size());
  for (auto& list : scratch.class_jobs) list.clear();
  for (uint32_t j = 0; j < jobs.size(); ++j) scratch.class_jobs[job_class[j]].push_back(j);
  int64_t starts = 0, stops = 0;
  for (size_t c = 0; c < result.start.size(); ++c) starts += result.start[c], stops += result.stop[c];
  result.start_tasks.reserve(static_cast<size_t>(starts));
  result.stop_tasks.reserve(static_cast<size_t>(stops));
  for (size_t c = 0; c < result.start.size(); ++c) {
    ChooseStarts(jobs, scratch.class_jobs[c], result.start[c], scratch, &result.start_tasks);
    ChooseStops(jobs, scratch.class_jobs[c], result.stop[c], scratch, &result.stop_tasks);
  }
}

}  // namespace berth::fairshare
