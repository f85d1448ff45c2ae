// Admission: one scheduling iteration of Scoot's load-based class algorithm,
// exactly as spec/fairshare.md ("The iteration", "Rebalancing") says: how
// many tasks of each class start (or stop), and which ones.
//
// The caller describes the cluster (W, the number of healthy worker slots)
// and the jobs in arrival order; Iterate answers with per-class counts and the
// chosen tasks, and changes nothing but the rebalance timer. Applying the
// answer (starting tasks, stopping tasks and putting them back at the front
// of their job's waiting list) is the caller's job. Time is passed in.
//
// Not thread-safe: one control loop owns it. Iterate allocates per class and
// per job, never per waiting task; its cost grows with jobs and started
// tasks, not with waiting tasks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "fairshare/config.h"

namespace berth::fairshare {

struct RunningTask {
  std::string id;
  Timestamp started_at;
};

struct WaitingTask {
  std::string id;
  // The mean of the task's recorded durations; absent when none is recorded.
  std::optional<Duration> expected_duration;
};

struct Job {
  std::string id;
  std::string requestor;
  std::vector<RunningTask> running;
  std::vector<WaitingTask> waiting;  // job order
};

// A task of the input: jobs[job].waiting[task] (starts) or jobs[job].running[task] (stops).
struct TaskRef {
  uint32_t job = 0;
  uint32_t task = 0;
  friend bool operator==(const TaskRef&, const TaskRef&) = default;
};

struct IterationResult {
  std::vector<int64_t> start;  // per class, in class order
  std::vector<int64_t> stop;   // per class, in class order
  // Waiting tasks to start, class by class in class order, each class's in
  // the order step 7 chooses them.
  std::vector<TaskRef> start_tasks;
  // Running tasks to stop (only when rebalancing), newest first within each
  // class. Each goes back to the front of its job's waiting tasks.
  std::vector<TaskRef> stop_tasks;
  bool rebalanced = false;
};

class Admission {
 public:
  explicit Admission(Config config = Config()) : config_(std::move(config)) {}

  const Config& config() const { return config_; }
  // For get/set of the parameters; changes take effect at the next Iterate.
  Config& mutable_config() { return config_; }

  // The rebalance timer: when the spread went over the threshold, or nullopt
  // when the timer is not running.
  std::optional<Timestamp> over_since() const { return over_since_; }
  void set_over_since(std::optional<Timestamp> since) { over_since_ = since; }

  // One iteration with `workers` healthy slots (busy ones included).
  IterationResult Iterate(int64_t workers, std::span<const Job> jobs, Timestamp now);

 private:
  class Pass;
  ClassIndex CachedClassOf(const std::string& requestor);

  Config config_;
  std::optional<Timestamp> over_since_;
  // requestor -> class, valid for config generation `cache_generation_`.
  std::unordered_map<std::string, ClassIndex> class_cache_;
  uint64_t cache_generation_ = UINT64_MAX;
};

}  // namespace berth::fairshare
