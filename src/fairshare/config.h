// Config: the fair-share class configuration of docs/admission.md
// ("Inputs", "Parameters").
//
// Holds what the user set (class load percents, the ordered requestor map,
// the rebalance threshold and minimum duration) and what the algorithm uses:
// the classes in class order (percent descending, then name) with their
// rescaled percents, and the compiled requestor patterns. Every setter
// validates first and leaves the configuration unchanged on error, so a bad
// change never replaces a good configuration. The Get/Set names are the ones
// the daemon's API exposes.
//
// Not thread-safe: the owner (one control loop) serialises access. Copyable;
// copies share the compiled patterns, which are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace re2 {
class RE2;
}

namespace berth::fairshare {

struct ClassShare {
  std::string name;
  int64_t percent = 0;
  friend bool operator==(const ClassShare&, const ClassShare&) = default;
};

// Requestors matching `pattern` (RE2, unanchored search) belong to `class_name`.
struct RequestorRule {
  std::string pattern;
  std::string class_name;
  friend bool operator==(const RequestorRule&, const RequestorRule&) = default;
};

using ClassIndex = uint32_t;  // position in class order

class Config {
 public:
  // One class, "default" at 100%, no requestor rules: every job belongs to it.
  Config();

  // Errors (InvalidArgument): no classes, an empty or duplicate name, a
  // negative percent, all percents zero, or a requestor rule that would name
  // a class no longer configured.
  Status SetClassLoadPercents(std::vector<ClassShare> classes);
  // The percents as set, in class order.
  std::vector<ClassShare> ClassLoadPercents() const;

  // Errors: a pattern that does not compile (with RE2's reason), or a rule
  // naming an unknown class. The first matching rule in list order wins.
  Status SetRequestorMap(std::vector<RequestorRule> rules);
  const std::vector<RequestorRule>& RequestorMap() const { return rules_; }

  // Spread (in percent points) above which rebalancing is considered; <= 0 disables it.
  int64_t RebalanceThreshold() const { return rebalance_threshold_; }
  void SetRebalanceThreshold(int64_t threshold) { rebalance_threshold_ = threshold; }
  // How long the spread must stay above the threshold; <= 0 disables rebalancing.
  Duration RebalanceMinDuration() const { return rebalance_min_duration_; }
  void SetRebalanceMinDuration(Duration d) { rebalance_min_duration_ = d; }
  bool RebalancingEnabled() const {
    return rebalance_threshold_ > 0 && rebalance_min_duration_ > Duration::zero();
  }

  // ---- what the algorithm reads, all in class order
  size_t class_count() const { return classes_.size(); }
  const std::string& ClassName(ClassIndex c) const { return classes_[c].name; }
  // The rescaled percent (sums to 100 over all classes).
  int64_t Percent(ClassIndex c) const { return percents_[c]; }
  // The class of a requestor: the first matching rule's, else the last class.
  ClassIndex ClassOf(std::string_view requestor) const;
  // Bumped by every successful change of classes or rules, so callers can
  // cache ClassOf answers.
  uint64_t generation() const { return generation_; }

 private:
  struct CompiledRule {
    std::shared_ptr<const re2::RE2> regex;
    ClassIndex class_index;
  };
  Status CompileRules(const std::vector<RequestorRule>& rules,
                      const std::vector<ClassShare>& classes,
                      std::vector<CompiledRule>* out) const;

  std::vector<ClassShare> classes_;  // as set, in class order
  std::vector<int64_t> percents_;    // rescaled, in class order
  std::vector<RequestorRule> rules_;
  std::vector<CompiledRule> compiled_;
  int64_t rebalance_threshold_ = 0;
  Duration rebalance_min_duration_{0};
  uint64_t generation_ = 0;
};

// Rescales percents that do not sum to 100 (docs/admission.md, "Inputs"): in
// class order, every class but the first gets floor(p * 100 / sum); the first
// gets 100 minus the others. `classes` must be in class order with a positive sum.
std::vector<int64_t> RescalePercents(const std::vector<ClassShare>& classes);

}  // namespace berth::fairshare
