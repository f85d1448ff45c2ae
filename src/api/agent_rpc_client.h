// AgentRpcClient: the client of a berth-agent's gRPC service
// (session/agent_service.proto): one HTTP/2 channel over TLS that every
// calling thread shares, many calls in flight at once. HttpAgentTransport
// uses it for the calls it carries when the agent offers it.
//
// Every failure (no connection, a deadline, a refusal, an answer that is
// not JSON) is Unavailable with why, naming the agent, as on HTTPS.
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "core/time.h"
#include "tls/context.h"

namespace berth::api {

// berthd's own certificate and key, as PEM files, which it presents to
// agents that ask for it (berth-agent --manager-ca). Both "" (default):
// none. Clients read them again after kReread, so that a renewed
// certificate is used without a restart (berthd renews with weeks left).
struct AgentClientIdentity {
  std::string cert_file, key_file;
  static constexpr auto kReread = std::chrono::hours(1);
  bool empty() const { return cert_file.empty(); }
  // The files' contents with `trust_pem` (empty ones when unset or
  // unreadable: the agent then refuses the call, saying why).
  tls::Credentials Load(const std::string& trust_pem) const;
};

class AgentRpcClient {
 public:
  enum class Method { kCommit, kRelease, kEligible, kBindings };

  // A channel to `target` ("host:port"), checking the agent's certificate
  // against `trust_pem` and presenting `identity`; it connects at the
  // first call.
  AgentRpcClient(std::string agent_id, std::string target, std::string token, std::string trust_pem,
                 AgentClientIdentity identity = {});
  ~AgentRpcClient();

  // `epoch`: the caller's leader epoch (0: none), as kEpochHeader.
  Result<Json> Call(Method method, const Json& body, Duration timeout, int64_t epoch);
  // Several sampling requests in one call: their answers in order.
  Result<std::vector<Json>> Sample(const std::vector<Json>& requests, Duration timeout,
                                   int64_t epoch);

  struct Channel;

 private:
  // The channel, made again once `identity_` is older than kReread.
  std::shared_ptr<Channel> Current();

  const std::string agent_id_, target_, token_, trust_pem_;
  const AgentClientIdentity identity_;
  std::mutex mu_;
  std::shared_ptr<Channel> channel_;
};

}  // namespace berth::api
