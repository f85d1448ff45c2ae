// AgentTransport: how a scheduler instance reaches one cluster agent
// (ARCHITECTURE.md, "Interfaces only at real seams"). The in-process
// implementation calls the agent directly; an HTTP one (berth-agent in its
// own process) will carry the same messages (agent/protocol.h).
//
// Each call has a timeout. A call that times out or fails returns an error
// Status (Unavailable), which callers treat as "no nodes" (sampling) or as a
// failed candidate (commit), never as a conflict. Thread-safe.
#pragma once

#include <string>

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
  virtual Result<agent::CommitResponse> Commit(const agent::CommitRequest& request,
                                               Duration timeout) = 0;
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

 private:
  agent::Agent& agent_;
};

}  // namespace berth::threephase
