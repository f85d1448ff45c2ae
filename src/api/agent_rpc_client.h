// AgentRpcClient: the client of a berth-agent's gRPC service
// (session/agent_service.proto): one HTTP/2 channel over TLS that every
// calling thread shares, many calls in flight at once. HttpAgentTransport
// uses it for the calls it carries when the agent offers it.
//
// Every failure (no connection, a deadline, a refusal, an answer that is
// not JSON) is Unavailable with why, naming the agent, as on HTTPS.
// Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "core/time.h"

namespace berth::api {

class AgentRpcClient {
 public:
  enum class Method { kCommit, kRelease, kEligible, kBindings };

  // A channel to `target` ("host:port"), checking the agent's certificate
  // against `trust_pem`; it connects at the first call.
  AgentRpcClient(std::string agent_id, const std::string& target, std::string token,
                 const std::string& trust_pem);
  ~AgentRpcClient();

  // `epoch`: the caller's leader epoch (0: none), as kEpochHeader.
  Result<Json> Call(Method method, const Json& body, Duration timeout, int64_t epoch);
  // Several sampling requests in one call: their answers in order.
  Result<std::vector<Json>> Sample(const std::vector<Json>& requests, Duration timeout,
                                   int64_t epoch);

  struct Channel;

 private:
  std::string agent_id_, token_;
  std::unique_ptr<Channel> channel_;
};

}  // namespace berth::api
