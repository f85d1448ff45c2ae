#include "fairshare/admission.h"

#include <algorithm>
#include <numeric>

#include "fairshare/task_choice.h"

namespace berth::fairshare {
namespace {

// ceil(a / b) for a >= 0, b > 0, exactly (the spec's "exact integer ceilings").
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// The counts of one iteration, per class in class order.
class Admission::Pass {
 public:
  Pass(const Config& config, int64_t workers, std::span<const Job> jobs,
       std::span<const ClassIndex> job_class);

  // spec "Rebalancing": the delta entitlement spread, in percent points.
  int64_t Spread() const;
  // Steps 4 and 5. Returns per-class starts.
  std::vector<int64_t> EntitlementAndLoans();
  // The rebalance counts: negative entries are stops.
  std::vector<int64_t> Rebalance();
  // The start-of-iteration counts, and the workers left idle (so far).
  void Explain(IterationResult& result) const {
    result.target = target_;
    result.running = running_;
    result.waiting = waiting_at_start_;
    result.idle = std::max<int64_t>(0, idle_);
  }

 private:
  bool AnyWaiting() const;
  void EntitlementPhase();
  // Up to `rounds` rounds of step 5 (each allocates what the last left idle).
  void LoanPhase(const std::vector<int64_t>& loaned, size_t rounds);
  int64_t Allocate(int64_t n, const std::vector<int64_t>& percent);

  const Config& config_;
  const size_t classes_;
  int64_t workers_;
  int64_t idle_ = 0;
  std::vector<int64_t> target_, running_, waiting_left_, to_start_, waiting_at_start_;
};

Admission::Pass::Pass(const Config& config, int64_t workers, std::span<const Job> jobs,
                      std::span<const ClassIndex> job_class)
    : config_(config),
      classes_(config.class_count()),
      workers_(workers),
      target_(classes_),
      running_(classes_),
      waiting_left_(classes_),
      to_start_(classes_) {
  // Step 1: every class but the first gets floor(W * p / 100); the first the rest.
  int64_t others = 0;
  for (size_t c = 1; c < classes_; ++c) others += target_[c] = workers * config.Percent(c) / 100;
  target_[0] = workers - others;
  // Step 2: membership. Jobs of a 0% class are not counted, but the workers
  // they hold are busy: idle = max(0, W - all running).
  int64_t all_running = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int64_t running = static_cast<int64_t>(jobs[j].running.size());
    all_running += running;
    const ClassIndex c = job_class[j];
    if (config.Percent(c) == 0) continue;
    running_[c] += running;
    waiting_left_[c] += static_cast<int64_t>(jobs[j].waiting.size());
  }
  idle_ = std::max<int64_t>(0, workers - all_running);
  waiting_at_start_ = waiting_left_;
}

bool Admission::Pass::AnyWaiting() const {
  return std::any_of(waiting_left_.begin(), waiting_left_.end(), [](int64_t w) { return w > 0; });
}

// d(c) = p(c) - floor(running(c) * 100 / W) over classes with waiting tasks
// or d(c) < 0; spread = max(0, max d) - min(0, min d); 0 for fewer than 2 classes.
int64_t Admission::Pass::Spread() const {
  if (classes_ < 2 || workers_ <= 0) return 0;
  int64_t max_d = 0, min_d = 0;
  for (size_t c = 0; c < classes_; ++c) {
    const int64_t d = config_.Percent(c) - running_[c] * 100 / workers_;
    if (waiting_left_[c] == 0 && d >= 0) continue;
    max_d = std::max(max_d, d);
    min_d = std::min(min_d, d);
  }
  return max_d - min_d;
}

// Step 6, allocate(n): k = min(waiting left, ceil(n * percent / 100)), capped
// so the running sum never passes n. Returns how many were allocated.
int64_t Admission::Pass::Allocate(int64_t n, const std::vector<int64_t>& percent) {
  int64_t sum = 0;
  for (size_t c = 0; c < classes_; ++c) {
    int64_t k = std::min(std::max<int64_t>(0, waiting_left_[c]), CeilDiv(n * percent[c], 100));
    if (sum + k > n) k = n - sum;
    to_start_[c] += k;
    waiting_left_[c] -= k;
    sum += k;
  }
  return sum;
}

// Step 4, at most once per class.
void Admission::Pass::EntitlementPhase() {
  std::vector<int64_t> unused(classes_), percent(classes_);
  for (size_t round = 0; round < classes_; ++round) {
    // unused(c) = target - (running + toStart) when >= 0 and c has waiting tasks.
    int64_t total = 0;
    for (size_t c = 0; c < classes_; ++c) {
      const int64_t u = target_[c] - (running_[c] + to_start_[c]);
      total += unused[c] = (u >= 0 && waiting_left_[c] > 0) ? u : 0;
    }
    if (total == 0) return;
    // percent(c) = floor(unused * 100 / total); the first class gets the rest.
    int64_t others = 0;
    for (size_t c = 1; c < classes_; ++c) others += percent[c] = unused[c] * 100 / total;
    percent[0] = 100 - others;
    idle_ -= Allocate(std::min(idle_, total), percent);
    if (!AnyWaiting() || idle_ <= 0) return;
  }
}

// Step 5, given what each class already has on loan.
void Admission::Pass::LoanPhase(const std::vector<int64_t>& loaned, size_t rounds) {
  std::vector<int64_t> entitled(classes_), percent(classes_);
  for (size_t round = 0; round < rounds && idle_ > 0 && AnyWaiting(); ++round) {
    // L = sum of loaned(c) + idle.
    int64_t loanable = idle_;
    for (int64_t l : loaned) loanable += l;
    // P = sum of percents of classes with waiting tasks; share(c) = p(c) / P.
    int64_t p_sum = 0;
    for (size_t c = 0; c < classes_; ++c)
      if (waiting_left_[c] > 0) p_sum += config_.Percent(c);
    if (p_sum == 0) return;
    // loanEnt(c) = max(0, floor(share(c) * L) - loaned(c)); T = sum.
    int64_t total = 0;
    for (size_t c = 0; c < classes_; ++c) {
      const int64_t share = waiting_left_[c] > 0 ? config_.Percent(c) : 0;
      total += entitled[c] = std::max<int64_t>(0, share * loanable / p_sum - loaned[c]);
    }
    // percent(c) = floor(loanEnt * 100 / T); Berth: floor(share * 100) when T is 0.
    for (size_t c = 0; c < classes_; ++c) {
      const int64_t share = waiting_left_[c] > 0 ? config_.Percent(c) : 0;
      percent[c] = total > 0 ? entitled[c] * 100 / total : share * 100 / p_sum;
    }
    idle_ -= Allocate(idle_, percent);
  }
}

std::vector<int64_t> Admission::Pass::EntitlementAndLoans() {
  EntitlementPhase();
  if (idle_ > 0 && AnyWaiting()) {
    // loaned(c) = max(0, running - target), running as at the start of the iteration.
    std::vector<int64_t> loaned(classes_);
    for (size_t c = 0; c < classes_; ++c)
      loaned[c] = std::max<int64_t>(0, running_[c] - target_[c]);
    LoanPhase(loaned, classes_);  // at most once per class
  }
  return to_start_;
}

std::vector<int64_t> Admission::Pass::Rebalance() {
  // running > target: stop the excess; running + waiting < target: start all
  // waiting; otherwise start up to the target. Never more than waiting.
  int64_t used = 0;
  for (size_t c = 0; c < classes_; ++c) {
    if (running_[c] > target_[c])
      to_start_[c] = target_[c] - running_[c];
    else if (running_[c] + waiting_left_[c] < target_[c])
      to_start_[c] = waiting_left_[c];
    else
      to_start_[c] = target_[c] - running_[c];
    to_start_[c] = std::min(to_start_[c], waiting_left_[c]);
    waiting_left_[c] -= std::max<int64_t>(0, to_start_[c]);
    used += running_[c] + to_start_[c];
  }
  idle_ = std::max<int64_t>(0, workers_ - used);
  if (idle_ > 0) {
    // One loan pass over the remainder; a stop counts against the loan, so a
    // loan shrinks a class's stop count: loaned(c) = max(0, excess + toStart).
    std::vector<int64_t> loaned(classes_);
    for (size_t c = 0; c < classes_; ++c)
      loaned[c] =
          std::max<int64_t>(0, running_[c] - target_[c] + std::min<int64_t>(0, to_start_[c]));
    // One pass, as the spec and Scoot: what it leaves idle waits for the
    // next iteration's entitlement and loan phases.
    LoanPhase(loaned, 1);
  }
  return to_start_;
}

ClassIndex Admission::CachedClassOf(const std::string& requestor) {
  if (cache_generation_ != config_.generation()) {
    class_cache_.clear();
    cache_generation_ = config_.generation();
  }
  auto [it, added] = class_cache_.try_emplace(requestor, 0);
  if (added) it->second = config_.ClassOf(requestor);
  return it->second;
}

IterationResult Admission::Iterate(int64_t workers, std::span<const Job> jobs, Timestamp now) {
  std::vector<ClassIndex> job_class(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) job_class[j] = CachedClassOf(jobs[j].requestor);
  IterationResult result;
  Pass pass(config_, workers, jobs, job_class);
  // Step 3: the rebalance timer starts when the spread goes over the
  // threshold, fires once it has run longer than the minimum duration, and
  // stops when it fires or the spread falls back (Berth: Scoot never stopped it).
  bool fire = false;
  if (config_.RebalancingEnabled() && pass.Spread() > config_.RebalanceThreshold()) {
    if (!over_since_) over_since_ = now;
    fire = now - *over_since_ > config_.RebalanceMinDuration();
    if (fire) over_since_.reset();
  } else {
    over_since_.reset();
  }
  std::vector<int64_t> counts;
  if (fire) {
    Pass rebalance(config_, workers, jobs, job_class);
    counts = rebalance.Rebalance();
    // A rebalance that starts nothing stops nothing either.
    result.rebalanced = std::any_of(counts.begin(), counts.end(), [](int64_t n) { return n > 0; });
    if (result.rebalanced) rebalance.Explain(result);
  }
  if (!result.rebalanced) {
    counts = pass.EntitlementAndLoans();
    pass.Explain(result);
  }
  result.start.resize(counts.size());
  result.stop.resize(counts.size());
  for (size_t c = 0; c < counts.size(); ++c) {
    result.start[c] = std::max<int64_t>(0, counts[c]);
    result.stop[c] = std::max<int64_t>(0, -counts[c]);
  }
  ChooseTasks(jobs, job_class, scratch_, result);
  return result;
}

}  // namespace berth::fairshare
