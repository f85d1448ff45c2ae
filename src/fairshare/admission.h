// Admission: one scheduling iteration of Scoot's load-based class algorithm,
// exactly as docs/admission.md ("The iteration", "Rebalancing") says: how
// many tasks of each class start (or stop), and which ones.
//
// The caller describes the cluster (W, the number of healthy worker slots)
// and the jobs in arrival order; Iterate answers with per-class counts and the
// chosen tasks, and changes nothing but the rebalance timer. Applying the
// answer (starting tasks, stopping tasks and putting them back at the front
// of their job's waiting list) is the caller's job. Time is passed in.
//
// Not thread-safe: one control loop owns it. Iterate allocates per class and
// per job, never per waiting task; its cost grows with jobs and with tasks
// started or stopped, not with tasks left waiting.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/time.h"
#include "fairshare/config.h"
#include "fairshare/job.h"
#include "fairshare/task_choice.h"

namespace berth::fairshare {

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
  ChoiceScratch scratch_;  // reused, so iterations do not allocate large buffers
  // requestor -> class, valid for config generation `cache_generation_`.
  std::unordered_map<std::string, ClassIndex> class_cache_;
  uint64_t cache_generation_ = UINT64_MAX;
};

}  // namespace berth::fairshare
