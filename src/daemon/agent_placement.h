// AgentPlacement: berthd's three-phase path, used instead of the full-view
// engine when external agents are configured (berthd --agent; docs/berthd.md).
// It runs a threephase::SchedulerInstance over the agents' transports and
// keeps what the control loop needs between passes:
//  - the tasks handed to the instance and not yet decided (in flight), so a
//    pass never submits a task twice;
//  - the outcomes (bound to an agent's node, or failed after every attempt)
//    until a pass reports them stored (Delivered), so a pass that lost a
//    store race sees them again;
//  - when a failed task may be tried again (`retry_after` later), so a task
//    no agent can take does not keep the samplers busy.
// Stopped tasks are released on their agent after the pass that stopped
// them committed. A release that fails (agent unreachable) is counted and
// not retried: the agent's capacity stays taken until it restarts.
//
// Thread-safe: the instance's threads deliver outcomes; the control loop
// calls everything else. Start once, Stop before destruction (the destructor
// does too).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/time.h"
#include "threephase/scheduler_instance.h"

namespace berth::daemon {

struct AgentPlacementOptions {
  threephase::SchedulerOptions scheduler;
  // A pass waits up to this long for the decisions on the tasks it handed
  // out, so a task is usually stored as placed by the pass that submitted
  // it; later decisions go to the next pass.
  Duration decide_within = std::chrono::milliseconds(20);
  // A task that failed every attempt is not submitted again before this.
  Duration retry_after = std::chrono::seconds(1);
  Duration release_timeout = std::chrono::seconds(1);
};

struct AgentPlacementCounters {
  std::atomic<uint64_t> submitted{0}, bound{0}, failed{0}, released{0}, release_errors{0};
};

class AgentPlacement {
 public:
  AgentPlacement(std::vector<threephase::AgentTransport*> agents,
                 AgentPlacementOptions options = {});
  ~AgentPlacement();
  AgentPlacement(const AgentPlacement&) = delete;
  AgentPlacement& operator=(const AgentPlacement&) = delete;

  // `on_outcome` runs on an instance thread after each outcome is kept
  // (berthd: notify the control loop).
  void Start(std::function<void()> on_outcome);
  void Stop();

  // Admission's W: the nodes of every agent, as counted at connection.
  int64_t Workers() const;

  // Hands a pending task to the instance, unless it is in flight, has an
  // outcome not yet delivered, or failed less than `retry_after` ago.
  // Returns whether it was submitted.
  bool Submit(agent::PlacementTask task);
  // Waits until every submitted task has an outcome; false on timeout.
  bool WaitIdle(Duration timeout) { return instance_->WaitIdle(timeout); }
  const AgentPlacementOptions& options() const { return options_; }
  // Whether tasks are in flight or outcomes not yet delivered.
  bool Busy() const;
  // Outcomes not yet delivered, by task id.
  std::map<std::string, threephase::TaskOutcome> Outcomes() const;
  // A pass stored these outcomes; forget them.
  void Delivered(const std::vector<std::string>& task_ids);
  // Gives the bindings of stopped tasks back: task ids by agent id.
  void Release(const std::map<std::string, std::vector<std::string>>& by_agent);

  const AgentPlacementCounters& counters() const { return counters_; }

 private:
  void Keep(const threephase::TaskOutcome& outcome);

  std::vector<threephase::AgentTransport*> agents_;
  AgentPlacementOptions options_;
  std::function<void()> on_outcome_;
  std::unique_ptr<threephase::SchedulerInstance> instance_;
  AgentPlacementCounters counters_;

  mutable std::mutex mu_;
  std::set<std::string, std::less<>> in_flight_;
  std::map<std::string, threephase::TaskOutcome> outcomes_;
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> retry_at_;
};

}  // namespace berth::daemon
