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
// The control loop never waits on an agent: releases, binding checks and
// eligibility questions are queued to a thread of this class ("agent
// calls", in order), whose answers a later pass takes (TakeLost, and the
// next EligibleNodes); an answer wakes the loop as an outcome does. A
// binding check works on the stored bindings of the pass that asked for it;
// tasks delivered or released after that pass are left out of its verdict
// (neither stray nor lost), and a pass applies a lost binding only to a task
// still bound there. The one wait left is the bounded `decide_within` for
// the instance's decisions on the tasks a pass submitted.
//
// Thread-safe: the instance's threads deliver outcomes and the calls thread
// runs the queued calls; the control loop calls everything else. Start
// once, Stop before destruction (the destructor does too).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/time.h"
#include "threephase/scheduler_instance.h"

namespace berth::daemon {

// A task no cluster agent could place: this, then ": <why>".
inline constexpr const char* kNoAgentMessage = "no cluster agent could place the task";

// berthd's sampling defaults: Np = 40 basis points and Cp = 25% rather than
// the spec's 400 and 50%. Over HTTP every sampled node travels as JSON, and
// on the 20,000-node benchmark these gave p99 13 ms at 1,000 tasks/s against
// 123 ms, and twice the throughput (docs/benchmarks.md). Two decision
// pipelines: a commit to a berth-agent is a round trip, and with one
// pipeline those round trips, one at a time, held placement at about 2,000
// tasks/s (docs/benchmarks.md, "The agent protocol on gRPC").
inline threephase::SchedulerOptions BerthdSampling() {
  threephase::SchedulerOptions options;
  options.cluster_percent = 25;
  options.node_basis_points = 40;
  options.decision_pipelines = 2;
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
  std::string task_id, agent_id, node_id, reason;
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
  // outcome not yet delivered, failed less than `retry_after` ago, or has
  // a release of its earlier binding still under way.
  // Returns whether it was submitted.
  bool Submit(agent::PlacementTask task);
  // Waits until every submitted task has an outcome; false on timeout.
  bool WaitIdle(Duration timeout) { return instance_->WaitIdle(timeout); }
  // Waits until the queued agent calls are done (tests, shutdown); false on
  // timeout (real time).
  bool WaitCalls(Duration timeout);
  const AgentPlacementOptions& options() const { return options_; }
  // Whether tasks are in flight, outcomes not yet delivered, or agent calls
  // queued or unanswered.
  bool Busy() const;
  // Outcomes not yet delivered, by task id.
  std::map<std::string, threephase::TaskOutcome> Outcomes() const;
  // A pass stored these outcomes; forget them.
  void Delivered(const std::vector<std::string>& task_ids);
  // Queues giving the bindings of stopped tasks back: task ids by agent id.
  // A release that fails makes its agent's bindings due for a check.
  void Release(const std::map<std::string, std::vector<std::string>>& by_agent);

  // Whether some agent's bindings are due to be compared with the store.
  bool BindingsDue();
  // When a pass is next needed for a binding check or a retry (nullopt:
  // none is planned). Call after the pass's Submit calls.
  std::optional<Timestamp> NextDue();
  // Queues a check of every due agent against `stored` (the store's state at
  // the start of the calling pass): the calls thread releases the bindings
  // of tasks that are neither stored there nor with the scheduler (in
  // flight, or an outcome not yet stored), and binds again the stored tasks
  // the agent has no binding for; those it cannot bind again (their node
  // has no room now, or is gone) come back through TakeLost.
  void CheckBindings(const StoredBindings& stored);
  // Lost bindings found by the checks that finished since the last call.
  std::vector<LostBinding> TakeLost();

  // The nodes, by agent (in the constructor's order), where a task of a
  // global service may run, as far as the agents have answered: asked once
  // per spec version (queued; the answer wakes the loop), and again of an
  // agent that did not answer. `agent_id(slot)` names the agents.
  const std::vector<std::vector<std::string>>& EligibleNodes(const std::string& service,
                                                             uint64_t spec_version,
                                                             const TaskSpec& spec);
  // Whether agent `slot` has answered EligibleNodes for `service` (its list
  // there is its answer, not a wait).
  bool EligibleKnown(const std::string& service, size_t slot) const {
    auto it = eligible_.find(service);
    return it != eligible_.end() && slot < it->second.answered.size() && it->second.answered[slot];
  }
  // Asks every agent again (one restarted, and its nodes may differ).
  void ForgetEligible() { eligible_.clear(); }
  size_t agent_count() const { return agents_.size(); }
  // Forgets the eligible nodes of services other than `services`.
  void KeepEligible(const std::set<std::string, std::less<>>& services);
  const std::string& agent_id(size_t slot) const { return agents_[slot]->agent_id(); }

  const AgentPlacementCounters& counters() const { return counters_; }
  // Times an agent was left out after failing (threephase::AgentHealth).
  uint64_t agent_skips() const { return instance_ ? instance_->health().skips() : 0; }

 private:
  // A queued agent call.
  struct Call {
    enum class Kind { kRelease, kCheck, kEligible } kind;
    size_t slot = 0;
    std::vector<std::string> task_ids;  // kRelease
    std::vector<StoredBinding> stored;  // kCheck
    std::string service;                // kEligible
    uint64_t spec_version = 0;
    std::shared_ptr<const TaskSpec> spec;
  };
  struct Eligible {
    uint64_t spec_version = 0;
    std::vector<char> answered, asked;            // by agent
    std::vector<std::vector<std::string>> nodes;  // by agent
  };
  struct EligibleAnswer {
    std::string service;
    uint64_t spec_version;
    size_t slot;
    std::optional<std::vector<std::string>> nodes;  // nullopt: no answer
  };

  void Keep(const threephase::TaskOutcome& outcome);
  std::optional<size_t> SlotOf(std::string_view agent_id) const;
  bool Available(size_t slot) const;
  void Failed(size_t slot);
  void Queue(Call call);
  void Calls();  // the calls thread
  void Run(const Call& call);
  void RunRelease(const Call& call);
  // One agent's binding check; false when it did not answer.
  bool RunCheck(size_t slot, const std::vector<StoredBinding>& stored);
  void Answered();  // wakes the control loop

  std::vector<threephase::AgentTransport*> agents_;
  const Clock& clock_;
  AgentPlacementOptions options_;
  std::function<void()> on_outcome_;
  std::unique_ptr<threephase::SchedulerInstance> instance_;
  AgentPlacementCounters counters_;

  mutable std::mutex mu_;
  std::set<std::string, std::less<>> in_flight_;
  // Task ids whose release call has not returned: not submitted before it
  // has, or the release would take the new binding with it (an agent
  // releases every binding of an id). A Submit refused for it asks for a
  // wake-up when the release returns.
  std::map<std::string, int, std::less<>> releasing_;
  bool submit_waited_ = false;
  std::map<std::string, threephase::TaskOutcome> outcomes_;
  std::map<std::string, Timestamp, std::less<>> retry_at_;
  // The calls thread's queue and answers (under mu_ too).
  std::condition_variable calls_cv_;
  std::deque<Call> calls_;
  bool calling_ = false, stopping_ = false;
  std::vector<LostBinding> lost_;
  std::vector<EligibleAnswer> eligible_answers_;
  // By agent: a release failed (check at once) or a check failed (check
  // again `retry_after` later).
  static constexpr char kCheckNow = 1, kRetryCheck = 2;
  std::vector<char> recheck_;
  // By agent, while a check is queued or running: tasks delivered or
  // released since its pass, which its verdict leaves alone.
  std::vector<std::optional<std::set<std::string, std::less<>>>> since_check_;
  std::thread caller_;
  // The control loop's alone (no lock): when each agent's bindings are due
  // to be checked, and the eligible nodes of global services.
  std::vector<Timestamp> check_at_;
  std::map<std::string, Eligible, std::less<>> eligible_;
};

}  // namespace berth::daemon
