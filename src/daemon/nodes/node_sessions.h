// NodeSessions: berthd's gRPC server of node sessions (docs/agent.md,
// "Sessions"), as SwarmKit's dispatcher keeps one stream per node. A
// berth-node opens one bidirectional stream (session/node_session.proto)
// over mutual TLS, and on it:
//  - sends its heartbeats, which go to NodeDispatcher::Heartbeat as the
//    HTTP route's do, and its task reports (NodeExecutor::Report), each
//    answered on the stream;
//  - receives its assignments as they are published: NodeExecutor's
//    publish hook names the nodes that changed, and pusher threads send
//    each of them what changed after what it last got (the long poll's
//    answer, without the poll).
// No thread per node: gRPC's callback API runs every stream's reactions on
// its own small pool; a stream costs its buffers and this map's entry.
//
// Who a stream is: the node certificate it presented at the handshake and
// the credential in its "authorization" metadata, checked together as
// NodeDispatcher::Authenticate checks an HTTP request's (a removed node's
// certificate or credential is refused). A node removed while its stream
// is open has it closed at once (Close); a newer stream of the same node
// replaces the older one. At most `max_per_address` sessions are open from
// one IP address (Nomad's rpc_max_conns_per_client): one more is refused
// with RESOURCE_EXHAUSTED, and a refusal of any kind is logged (at most a
// line a second, so that a flood of them cannot flood the log).
//
// TLS: the server's certificate, key and the trust bundle are read from
// files that gRPC watches (ClusterCa writes them), so berthd's renewal and
// a CA rotation reach new handshakes without a restart.
//
// Thread-safe. Start and Stop from the owning thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/histogram.h"
#include "core/status.h"
#include "core/time.h"
#include "daemon/nodes/node_dispatcher.h"
#include "daemon/nodes/node_executor.h"
#include "daemon/nodes/node_routes.h"

namespace grpc {
class Server;
class Status;
}  // namespace grpc

namespace berth::daemon {

// Swarm serves its nodes on 2377 beside the API; berthd's API is 7480.
inline constexpr int kDefaultSessionPort = 7479;

struct NodeSessionsOptions {
  std::string host = "0.0.0.0";  // the address to listen on
  int port = 7479;               // 0: any free port (see port())
  // PEM files of the server's certificate chain, its key and the CAs whose
  // client certificates are accepted. Required; re-read every
  // `tls_refresh` (gRPC's file watcher).
  std::string cert_file, key_file, ca_file;
  Duration tls_refresh = std::chrono::seconds(5);
  // The largest message either side may send. Default 16 MiB (a full list
  // of a node's assignments).
  int max_message_bytes = 16 << 20;
  // HTTP/2 keepalive pings on an idle stream, and how long an answer to one
  // may take before the connection is closed. Defaults 30 s and 10 s.
  Duration keepalive = std::chrono::seconds(30);
  Duration keepalive_timeout = std::chrono::seconds(10);
  // How long a new connection may take to finish its TLS handshake before
  // it is closed. Default 10 s: gRPC's own 120 s let a flood of connections
  // that never finish hold the process's file descriptors.
  Duration handshake_timeout = std::chrono::seconds(10);
  // A connection with no session open is closed after this long. Default
  // 2 min: a node's connection carries its session all the time, so an idle
  // one is left over or held open on purpose.
  Duration idle_timeout = std::chrono::minutes(2);
  // Sessions open at once from one IP address; 0: no limit. Default 100, as
  // Nomad's rpc_max_conns_per_client: a machine runs one berth-node, so
  // more from one address is a flood or many nodes behind one NAT.
  int max_per_address = 100;
  // Threads that push assignments to streams, sharing a publish to many
  // nodes. Default 2: one thread took 1.5-1.7 s to push 100,000 tasks to
  // 10,000 nodes on a two-core machine, two took 0.9-1.1 s
  // (docs/benchmarks.md, "Node sessions").
  int pushers = 2;
};

class NodeSessions {
 public:
  // `hooks` as the node routes' (serving: whether this replica leads;
  // stamp: the leader's epoch on every answer).
  NodeSessions(NodeDispatcher& dispatcher, NodeExecutor& executor, NodeRouteHooks hooks,
               NodeSessionsOptions options);
  ~NodeSessions();
  NodeSessions(const NodeSessions&) = delete;
  NodeSessions& operator=(const NodeSessions&) = delete;

  // Binds and serves. Unavailable when the address cannot be bound.
  Status Start();
  // Ends every stream (UNAVAILABLE) and stops. Idempotent.
  void Stop();
  int port() const { return port_; }

  // Pushes to these nodes' streams what changed for them (`all`: every
  // stream). Returns at once: NodeExecutor's publish hook.
  void Published(const std::vector<std::string>& nodes, bool all);
  // Ends `node`'s stream with PERMISSION_DENIED node_removed.
  void Close(const std::string& node);
  // Streams open now (berth_node_sessions).
  size_t open() const;
  // The round trips nodes measured of their heartbeats (Heartbeat.round_trip_ns).
  const Histogram& heartbeat_round_trips() const { return heartbeat_round_trips_; }

  class Stream;  // one node's stream (node_sessions.cc)

 private:
  class Service;
  void PushLoop();
  // Refused when `address` has max_per_address sessions open already (a
  // node's newer session from its same address replaces its older one).
  grpc::Status Attach(const std::string& node, const std::string& address, Stream* stream);
  void Detach(const std::string& node, Stream* stream);
  void Uncount(const std::string& address);  // under mu_
  void MarkDirty(const std::string& node);   // under mu_
  void LogRefusal(const std::string& address, const std::string& why);

  NodeDispatcher& dispatcher_;
  NodeExecutor& executor_;
  NodeRouteHooks hooks_;
  NodeSessionsOptions options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::unordered_map<std::string, Stream*> streams_;  // by node
  std::unordered_map<std::string, int> per_address_;  // streams_ by IP address
  std::deque<std::string> dirty_;                     // nodes to push to, oldest first
  std::unordered_set<std::string> queued_;            // the nodes in dirty_
  bool all_dirty_ = false, stopping_ = false;
  std::vector<std::thread> pushers_;
  Histogram heartbeat_round_trips_;

  std::mutex log_mu_;
  int64_t last_log_ns_ = 0;  // SteadyNowNs of the last refusal logged
  int64_t unlogged_ = 0;     // refusals since, not logged
};

}  // namespace berth::daemon
