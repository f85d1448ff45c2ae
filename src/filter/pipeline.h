// Pipeline: the seven filters of docs/placement.md ("Filter pipeline") in
// that order, with limits (limits_filter.h) after platform, then affinity
// (filter 8), with the failure counts that explain why a task fits nowhere.
//
// Process(node) runs the filters that take part for the loaded task; the first
// one that rejects the node gets one more failure. When a node passes, every
// count resets to zero, so Explain() only ever describes a task that fits
// nowhere (SwarmKit's behaviour). SetTask also resets the counts. Used by one
// thread at a time; Process does not allocate.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "filter/affinity_filter.h"
#include "filter/filter.h"
#include "filter/service_lookup.h"

namespace berth::filter {

class Pipeline {
 public:
  static constexpr int kFilterCount = 9;

  // Which filters take part: all of them, or only those the node alone
  // decides (ready, plugins, constraints, platform, limits) - what a global
  // service's orchestrator checks before it makes a task for a node.
  enum class Scope { kAll, kNodeOnly };

  Pipeline();

  // `services` resolves the services the task's affinities name; without
  // it, no node holds any of them.
  void SetTask(const TaskSpec& spec, ServiceIndex service, Scope scope = Scope::kAll,
               const ServiceLookup& services = {});
  bool Process(const NodeInfo& node);

  // Non-zero parts joined by "; ", most failures first, ties in pipeline
  // order; "" when nothing failed.
  std::string Explain() const;

 private:
  std::array<std::unique_ptr<Filter>, kFilterCount> filters_;
  AffinityFilter* affinity_;                       // filters_.back()
  std::array<Filter*, kFilterCount> enabled_{};    // compacted: the filters taking part
  std::array<int, kFilterCount> enabled_index_{};  // position of enabled_[i] in filters_
  int enabled_count_ = 0;
  std::array<int, kFilterCount> failures_{};
  bool any_failure_ = false;
};

}  // namespace berth::filter
