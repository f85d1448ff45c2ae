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
// them committed. Each agent's bindings are compared with the store at
// start, every `check_bindings_every`, and after a failed release: a
// binding no stored task holds (made just before berthd crashed, or whose
// release failed) is released; a stored task the agent has no binding for
// (the agent restarted) is bound again to its node, or reported lost when
// the node has no room for it any more.
// Global services: the nodes where their tasks may run are asked of every
// agent once per spec version (AgentTransport::Eligible).
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
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "threephase/scheduler_instance.h"

namespace berth::daemon {

// berthd's sampling defaults: Np = 40 basis points and Cp = 25% rather than
// the spec's 400 and 50%. Over HTTP every sampled node travels as JSON, and
// on the 20,000-node benchmark these gave p99 13 ms at 1,000 tasks/s against
// 123 ms, and twice the throughput (docs/benchmarks.md, issue 14).
inline threephase::SchedulerOptions BerthdSampling() {
  threephase::SchedulerOptions options;
  options.cluster_percent = 25;
  options.node_basis_points = 40;
  return options;
}

struct AgentPlacementOptions {
  threephase::SchedulerOptions scheduler = BerthdSampling();
  // A pass waits up to this long for the decisions on the tasks it handed
  // out, so a task is usually stored as placed by the pass that submitted
  // it; later decisions go to the next pass.
  Duration decide_within = std::chrono::milliseconds(20);
  // A task that failed every attempt is not submitted again before this,
  // and an agent whose bindings could not be checked is tried again then.
  Duration retry_after = std::chrono::seconds(1);
  Duration release_timeout = std::chrono::seconds(1);
  // How often agents' bindings are compared with the store (CheckBindings).
  Duration check_bindings_every = std::chrono::seconds(30);
};

struct AgentPlacementCounters {
  // By CheckBindings: stray_released, bindings an agent held for tasks the
  // store does not have bound there; rebound, stored tasks an agent had
  // lost and bound again; lost, those it could not bind again.
  std::atomic<uint64_t> submitted{0}, bound{0}, failed{0}, released{0}, release_errors{0},
      stray_released{0}, rebound{0}, lost{0};
};

// A task the store has bound on an agent's node.
struct StoredBinding {
  std::string task_id, node_id;
  std::shared_ptr<const TaskSpec> spec;
};
// By agent id.
using StoredBindings = std::map<std::string, std::vector<StoredBinding>, std::less<>>;
// A stored task its agent had lost and could not bind again, and why.
struct LostBinding {
  std::string task_id, reason;
};

class AgentPlacement {
 public:
  // `clock` (not owned) times retries and binding checks.
  AgentPlacement(std::vector<threephase::AgentTransport*> agents, const Clock& clock,
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

  // Whether some agent's bindings are due to be compared with the store.
  bool BindingsDue() const;
  // When a pass is next needed for a binding check or a retry (nullopt:
  // none is planned). Call after the pass's Submit calls.
  std::optional<Timestamp> NextDue();
  // On every due agent that answers: releases the bindings of tasks that
  // are neither `stored` there nor with the scheduler (in flight, or an
  // outcome not yet stored), and binds again the stored tasks the agent has
  // no binding for. Returns those it could not bind again (their node has no
  // room now, or is gone). Call at the start of a pass, with the store's
  // state.
  std::vector<LostBinding> CheckBindings(const StoredBindings& stored);

  // The nodes, by agent (in the constructor's order), where a task of a
  // global service may run; asked once per spec version, and again of an
  // agent that did not answer. `agent_id(slot)` names the agents.
  const std::vector<std::vector<std::string>>& EligibleNodes(const std::string& service,
                                                             uint64_t spec_version,
                                                             const TaskSpec& spec);
  // Forgets the eligible nodes of services other than `services`.
  void KeepEligible(const std::set<std::string, std::less<>>& services);
  const std::string& agent_id(size_t slot) const { return agents_[slot]->agent_id(); }

  const AgentPlacementCounters& counters() const { return counters_; }
  // Times an agent was left out after failing (threephase::AgentHealth).
  uint64_t agent_skips() const { return instance_ ? instance_->health().skips() : 0; }

 private:
  void Keep(const threephase::TaskOutcome& outcome);
  std::optional<size_t> SlotOf(std::string_view agent_id) const;
  bool Available(size_t slot) const;
  void Failed(size_t slot);
  // One agent's part of CheckBindings; false when it did not answer.
  bool CheckAgent(size_t slot, const std::vector<StoredBinding>& stored,
                  std::vector<LostBinding>* lost);
  struct Eligible {
    uint64_t spec_version = 0;
    std::vector<char> answered;                   // by agent
    std::vector<std::vector<std::string>> nodes;  // by agent
  };

  std::vector<threephase::AgentTransport*> agents_;
  const Clock& clock_;
  AgentPlacementOptions options_;
  std::function<void()> on_outcome_;
  std::unique_ptr<threephase::SchedulerInstance> instance_;
  AgentPlacementCounters counters_;

  mutable std::mutex mu_;
  std::set<std::string, std::less<>> in_flight_;
  std::map<std::string, threephase::TaskOutcome> outcomes_;
  std::map<std::string, Timestamp, std::less<>> retry_at_;
  // The control loop's alone (no lock): when each agent's bindings are due
  // to be checked, and the eligible nodes of global services.
  std::vector<Timestamp> check_at_;
  std::map<std::string, Eligible, std::less<>> eligible_;
};

}  // namespace berth::daemon
