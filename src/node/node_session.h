// NodeSession: berth-node's end of a node session (docs/agent.md,
// "Sessions"; session/node_session.proto): one gRPC stream to berthd over
// mutual TLS, on which the node sends heartbeats and task reports and
// berthd pushes assignments. A reader thread hands each pushed batch and
// heartbeat answer to the handlers; a report waits for its answer.
//
// The stream's end is a Status in the node API's words, so that the agent
// treats it as it treats an HTTP answer: PermissionDenied "node_removed:
// ..." (the node was removed), InvalidArgument "unauthorized: ..." (berthd
// does not know the credential), Unavailable (the replica does not lead,
// or cannot be reached).
//
// Thread-safe: Heartbeat and Report from any thread (writes are serialised).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "api/json_fields.h"
#include "core/status.h"
#include "core/time.h"
#include "tls/context.h"

namespace berth::session::v1 {
class NodeMessage;
}
namespace grpc {
class ChannelArguments;
}

namespace berth::node {

struct NodeSessionOptions {
  std::string target;      // berthd's "host:port" of node sessions. Required.
  tls::Credentials tls;    // the node's certificate and key, and the trust bundle
  std::string credential;  // the node's credential
  std::string instance;    // Open's Hello: the berthd instance the node last heard from
  int64_t since = 0;       // and the revision of its last assignments
  Duration connect_timeout = std::chrono::seconds(10);
  int max_message_bytes = 16 << 20;  // as berthd's
  // How often a heartbeat asks berthd for an answer, to time its round trip
  // (0: every one). An answer is a message on berthd's side per node, so
  // not every heartbeat asks; an answer up to this late is still timed.
  Duration time_heartbeats_every = std::chrono::seconds(30);
  // Called on the reader thread, in order.
  std::function<void(api::Json batch)> on_assignments;
  std::function<void(api::Json answer)> on_heartbeat;
  // Called on the reader thread once the stream ended (after which ended()
  // holds).
  std::function<void()> on_end;
};

// The arguments of a node session's channel: message limits, keepalive,
// read chunks and TLS frame size. NodeSession's, and anything else's that
// opens a session as berth-node does (session_bench).
grpc::ChannelArguments SessionChannelArguments(int max_message_bytes);

class NodeSession {
 public:
  // Connects and says hello (Connect, WaitConnected, Start). Unavailable
  // when berthd cannot be reached in connect_timeout.
  static Result<std::unique_ptr<NodeSession>> Open(NodeSessionOptions options);

  // The steps of Open, for a caller that goes on while the connection and
  // its TLS handshake are made (berth-node heartbeats over HTTPS until
  // then): Connect starts connecting and returns at once; Connecting says
  // how it goes, without waiting (kFailed: refused, the handshake failed,
  // or connect_timeout passed); Start, once ready, opens the stream and
  // says hello with what the node last saw.
  enum class Progress { kConnecting, kReady, kFailed };
  static std::unique_ptr<NodeSession> Connect(NodeSessionOptions options);
  Progress Connecting() const;
  bool WaitConnected(Duration timeout) const;  // true: ready
  void Start(const std::string& instance, int64_t since);
  const std::string& target() const { return options_.target; }
  ~NodeSession();

  // Sends a heartbeat, with the round trip of the last timed one answered
  // (berthd's berth_node_heartbeat_round_trip_seconds); it asks to be
  // answered, and is timed, when time_heartbeats_every has passed since the
  // last that was.
  Status Heartbeat();
  // Sends a batch of reports (the body of POST /v1/node/status) and waits
  // up to `timeout` for berthd's answer.
  Result<api::Json> Report(const api::Json& body, Duration timeout);

  bool ended() const;
  // Ends the stream (if it has not) and returns why it ended.
  Status Close();

 private:
  struct Call;  // the gRPC objects (node_session.cc)
  explicit NodeSession(NodeSessionOptions options);
  bool Write(const session::v1::NodeMessage& message);  // under write_mu_
  void ReadLoop();

  NodeSessionOptions options_;
  std::unique_ptr<Call> call_;
  std::mutex write_mu_;
  std::thread reader_;

  mutable std::mutex mu_;
  std::condition_variable answered_;
  uint64_t next_seq_ = 1;
  std::map<uint64_t, std::optional<Result<api::Json>>> pending_;  // reports awaiting answers
  // The last timed heartbeat (its seq, 0 once answered, and when it was
  // sent), and the round trip of the last one answered, not yet sent in a
  // heartbeat (0: none).
  uint64_t timed_seq_ = 0, last_seq_ = 0;
  std::optional<std::chrono::steady_clock::time_point> timed_sent_;
  int64_t round_trip_ns_ = 0;
  bool ended_ = false;
  std::optional<Status> end_;
};

}  // namespace berth::node
