// HttpAgentTransport: reaches a berth-agent process over HTTPS (keep-alive,
// bearer token), carrying the messages of agent/protocol.h in the format of
// api/agent_codec.h. Implements threephase::AgentTransport, so a scheduler
// instance uses remote agents exactly as in-process ones. When the agent
// offers its gRPC service (GET /v1/agent's "rpc_port", over TLS only),
// sampling, commits, releases, bindings and eligibility go over it instead
// (AgentRpcClient: one connection, calls multiplexed on it, several tasks
// in one sampling call); the agent's id, its runs and task logs stay on
// HTTPS.
//
// A call that fails to connect, times out, or gets a non-JSON or 5xx answer
// returns Unavailable; the scheduler treats that as "no nodes" (sampling) or
// a failed candidate (commit), never as a conflict. Thread-safe: each
// calling thread gets its own connection.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "api/agent_rpc_client.h"
#include "api/json_fields.h"
#include "threephase/transport.h"

namespace berth::api {

class HttpAgentTransport final : public threephase::AgentTransport {
 public:
  // Asks the agent at `server` ("host:port", or a URL) for its id and node
  // count (GET /v1/agent). With `trust_pem` (the agents' CA bundles,
  // berthd --agent-ca) the agent is called over HTTPS and its certificate
  // checked against them; without, "host:port" is plain HTTP. `identity`:
  // the certificate berthd presents (over HTTPS and gRPC alike).
  static Result<std::unique_ptr<HttpAgentTransport>> Connect(const std::string& server,
                                                             const std::string& token,
                                                             const std::string& trust_pem = "",
                                                             AgentClientIdentity identity = {});
  ~HttpAgentTransport() override;

  const std::string& agent_id() const override { return id_; }
  Result<agent::SampleResponse> Sample(const agent::SampleRequest& request,
                                       Duration timeout) override;
  std::vector<Result<agent::SampleResponse>> SampleMany(
      const std::vector<agent::SampleRequest>& requests, Duration timeout) override;
  Result<agent::CommitResponse> Commit(const agent::CommitRequest& request,
                                       Duration timeout) override;
  Result<size_t> Release(const std::vector<std::string>& task_ids, Duration timeout) override;
  Result<std::vector<std::string>> Bindings(Duration timeout) override;
  Result<std::vector<std::string>> Eligible(const TaskSpec& spec, Duration timeout) override;
  // GET /v1/runs?instance=&sequence=&wait_ms= (a long poll); each answer
  // also updates node_count.
  Result<agent::RunsBatch> Runs(const std::string& instance, int64_t sequence,
                                Duration wait) override;
  uint32_t node_count() const override { return node_count_.load(); }
  // GET /v1/tasks/{run}/logs?tail=&after= of an agent that fronts
  // berth-node machines: the run's log lines, which the agent reads from
  // its node.
  Result<Json> TaskLogs(const std::string& run, int64_t tail, int64_t after);
  // GET /v1/nodes: {"nodes": [...]}, the agent's nodes with what is bound
  // to each (berthd's node list shows them).
  Result<Json> Nodes();
  // "host:port" (or URL) the agent was reached at.
  const std::string& server() const { return server_; }
  // From now on every call carries `epoch` (X-Berth-Epoch), the leader's
  // fencing token: the agent refuses calls of an older epoch than one it
  // has seen (docs/ha.md). 0: none (a single berthd).
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  // Whether calls go over the agent's gRPC service.
  bool uses_rpc() const { return rpc_ != nullptr; }

 private:
  HttpAgentTransport(std::string server, std::string token, std::string trust_pem,
                     AgentClientIdentity identity, std::string id, uint32_t node_count);
  // A call over gRPC when the agent offers it, else `path` over HTTPS
  // (a POST with `body`, or a GET without).
  Result<Json> Call(AgentRpcClient::Method method, const char* path, const Json* body,
                    Duration timeout);
  Result<Json> Https(const char* path, const Json* body, Duration timeout);

  std::string server_, token_, trust_pem_;
  AgentClientIdentity identity_;
  std::string id_;
  std::atomic<uint32_t> node_count_;
  std::atomic<int64_t> epoch_{0};
  std::unique_ptr<AgentRpcClient> rpc_;
};

}  // namespace berth::api
