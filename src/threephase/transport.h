// AgentTransport: how a scheduler instance reaches one cluster agent
// (docs/architecture.md, "Seams"). The in-process implementation calls the
// agent directly; the HTTP one (api/http_agent_transport.h: berth-agent in
// its own process) carries the same messages (agent/protocol.h).
//
// Release tells the agent that bound tasks stopped, so their demand goes
// back to its nodes; Bindings lists the tasks bound there (berthd compares
// them with its store after a restart); Eligible lists the nodes where a
// global service's task may run (Agent::Eligible); node_count is the size
// of the agent's cluster as last known (berthd's admission counts it as
// workers); Runs is how berthd learns what became of the tasks an agent
// that fronts berth-node machines runs.
//
// SampleMany carries several tasks' sampling requests in one call.
//
// Each call has a timeout. A call that times out or fails returns an error
// Status (Unavailable), which callers treat as "no nodes" (sampling) or as a
// failed candidate (commit), never as a conflict. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/protocol.h"
#include "core/status.h"
#include "core/time.h"

namespace berth::threephase {

class AgentTransport {
 public:
  virtual ~AgentTransport() = default;
  virtual const std::string& agent_id() const = 0;
  virtual Result<agent::SampleResponse> Sample(const agent::SampleRequest& request,
                                               Duration timeout) = 0;
  // Several tasks' requests at once, answered in order, within `timeout`
  // for all of them: one round trip where the transport can (the default
  // asks one at a time). A failure of the whole call fails every answer.
  virtual std::vector<Result<agent::SampleResponse>> SampleMany(
      const std::vector<agent::SampleRequest>& requests, Duration timeout) {
    std::vector<Result<agent::SampleResponse>> answers;
    answers.reserve(requests.size());
    for (const agent::SampleRequest& request : requests)
      answers.push_back(Sample(request, timeout));
    return answers;
  }
  virtual Result<agent::CommitResponse> Commit(const agent::CommitRequest& request,
                                               Duration timeout) = 0;
  // The number of `task_ids` that were bound there and are now released.
  virtual Result<size_t> Release(const std::vector<std::string>& task_ids, Duration timeout) = 0;
  virtual Result<std::vector<std::string>> Bindings(Duration timeout) = 0;
  virtual Result<std::vector<std::string>> Eligible(const TaskSpec& spec, Duration timeout) = 0;
  virtual uint32_t node_count() const = 0;
  // The runs of an agent that fronts berth-node machines which changed
  // after `sequence` of `instance` (agent::RunsBatch), waiting up to `wait`
  // for one. NotFound: the agent runs nothing (simulated nodes), the
  // default.
  virtual Result<agent::RunsBatch> Runs(const std::string& /*instance*/, int64_t /*sequence*/,
                                        Duration /*wait*/) {
    return Status::NotFound("agent " + agent_id() + " runs no processes: its nodes are simulated");
  }
};

// Calls an Agent in the same process. The sampling budget is capped by the
// timeout, so an in-process call cannot outlast it by more than one node's
// evaluation; a commit never waits on the network.
class InProcessTransport final : public AgentTransport {
 public:
  explicit InProcessTransport(agent::Agent& agent) : agent_(agent) {}
  const std::string& agent_id() const override { return agent_.id(); }
  Result<agent::SampleResponse> Sample(const agent::SampleRequest& request,
                                       Duration timeout) override {
    agent::SampleRequest bounded = request;
    bounded.budget = std::min(bounded.budget, timeout);
    return agent_.Sample(bounded);
  }
  Result<agent::CommitResponse> Commit(const agent::CommitRequest& request, Duration) override {
    return agent_.Commit(request);
  }
  Result<size_t> Release(const std::vector<std::string>& task_ids, Duration) override {
    return agent_.Release(task_ids);
  }
  Result<std::vector<std::string>> Bindings(Duration) override { return agent_.BoundTasks(); }
  Result<std::vector<std::string>> Eligible(const TaskSpec& spec, Duration) override {
    return agent_.Eligible(spec);
  }
  uint32_t node_count() const override { return agent_.nodes().size(); }

 private:
  agent::Agent& agent_;
};

}  // namespace berth::threephase
