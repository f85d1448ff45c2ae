// AgentRpcServer: berth-agent's gRPC face (session/agent_service.proto):
// the calls of AgentCalls as unary gRPC calls over TLS, which berthd and
// scheduler instances make many at once on one HTTP/2 connection, and a
// sampling call that carries several tasks (docs/agent.md, "The agent
// protocol"). Callers present the agent's token ("authorization: Bearer")
// as on HTTPS; a malformed payload gets INVALID_ARGUMENT with why, a stale
// epoch FAILED_PRECONDITION, and neither changes anything.
//
// Thread-safe; Stop (or the destructor) waits for the calls in flight.
#pragma once

#include <memory>
#include <string>

#include "agent_server/agent_service.h"
#include "core/status.h"
#include "core/time.h"

namespace grpc {
class Server;
}

namespace berth::agent_server {

struct AgentRpcOptions {
  std::string host = "0.0.0.0";  // the address to listen on
  int port = 7491;               // 0: any free port (see port())
  std::string token;             // the agent's API token; required
  // PEM files of the server's certificate chain and key, re-read every
  // `tls_refresh` (gRPC's file watcher), so a renewal needs no restart.
  // Required.
  std::string cert_file, key_file;
  // berthd's CA bundle (berth-agent --manager-ca). Default "": callers are
  // known by the token alone. Set: every caller must also present a
  // certificate of this CA with role `manager` (berthd's own), re-read as
  // the other files.
  std::string manager_ca_file;
  Duration tls_refresh = std::chrono::seconds(5);
  // The largest message either side may send. Default 16 MiB (a batch of
  // sampling answers).
  int max_message_bytes = 16 << 20;
  // How long a new connection may take to finish its TLS handshake
  // (default 10 s, as berthd's node sessions).
  Duration handshake_timeout = std::chrono::seconds(10);
};

class AgentRpcServer {
 public:
  // Listens and serves `calls` (not owned; outlives the server).
  // Unavailable when the address cannot be bound.
  static Result<std::unique_ptr<AgentRpcServer>> Start(AgentCalls& calls, AgentRpcOptions options);
  ~AgentRpcServer();
  int port() const { return port_; }
  void Stop();

  class Service;

 private:
  AgentRpcServer() = default;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace berth::agent_server
