#include "daemon/nodes/node_sessions.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <pthread.h>

#include <cstdio>
#include <deque>
#include <optional>

#include "session/grpc_defaults.h"
#include "session/node_session.grpc.pb.h"
#include "tls/certificate.h"

namespace berth::daemon {

namespace pb = berth::session::v1;
using api::Json;

namespace {

// The error of a status for a gRPC status: what a node refused over HTTP
// would have been told, with the same words.
grpc::Status ToGrpc(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return {grpc::StatusCode::INVALID_ARGUMENT, status.message()};
    case StatusCode::kNotFound:
      return {grpc::StatusCode::NOT_FOUND, status.message()};
    case StatusCode::kPermissionDenied:
      return {grpc::StatusCode::PERMISSION_DENIED, status.message()};
    case StatusCode::kUnavailable:
      return {grpc::StatusCode::UNAVAILABLE, status.message()};
    default:
      return {grpc::StatusCode::INTERNAL, status.message()};
  }
}

std::string Metadata(const grpc::CallbackServerContext& context, const std::string& key) {
  auto it = context.client_metadata().find(key);
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// The IP address in gRPC's peer name ("ipv4:10.0.0.7:40112",
// "ipv6:[::1]:40112"); the name itself when it is neither.
std::string PeerAddress(std::string_view peer) {
  for (std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (!peer.starts_with(scheme)) continue;
    std::string_view host = peer.substr(scheme.size());
    host = host.substr(0, host.rfind(':'));
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    return std::string(host);
  }
  return std::string(peer);
}

}  // namespace

// One node's stream. Writes go one at a time (gRPC allows one in flight):
// answers queue, and a push is computed when the stream is free, so
// pushes to a slow node coalesce into one batch of what changed.
// Lifetime: the sessions' map and the pusher hold shared_ptrs; the
// reactor's own reference (self_) goes at OnDone, after which nothing
// starts an operation on it (done_).
class NodeSessions::Stream final
    : public grpc::ServerBidiReactor<pb::NodeMessage, pb::ManagerMessage> {
 public:
  Stream(NodeSessions& sessions, grpc::CallbackServerContext* context)
      : sessions_(sessions), context_(context) {}

  // After construction (self_ needs the shared_ptr).
  void Begin(std::shared_ptr<Stream> self) {
    self_ = std::move(self);
    address_ = PeerAddress(context_->peer());
    grpc::Status who = Authenticate();
    if (who.ok()) who = sessions_.Attach(node_, address_, this);
    if (!who.ok()) {
      sessions_.LogRefusal(address_, who.error_message());
      return Refuse(who);
    }
    StartRead(&in_);
  }

  // The IP address the stream came from; set before it is attached.
  const std::string& address() const { return address_; }

  // Null once the stream is done.
  std::shared_ptr<Stream> shared() {
    std::lock_guard lock(mu_);
    return self_;
  }

  // Something changed for this node: push it when the stream is free.
  void Changed() {
    {
      std::lock_guard lock(mu_);
      dirty_ = true;
    }
    Pump();
  }

  // Ends the stream with `status` once the write in flight is done.
  void End(grpc::Status status, bool removed = false) {
    {
      std::lock_guard lock(mu_);
      if (ending_ || done_) return;
      ending_ = std::move(status);
      removed_ = removed;
    }
    Pump();
  }

 private:
  grpc::Status Authenticate() {
    if (Status serving = sessions_.hooks_.serving(); !serving.ok()) return ToGrpc(serving);
    const std::string bearer = Metadata(*context_, "authorization");
    if (!bearer.starts_with("Bearer "))
      return Unauthenticated("the node's credential is missing (authorization: Bearer)");
    std::optional<tls::CertificateInfo> peer;
    if (auto auth = context_->auth_context(); auth != nullptr) {
      std::vector<grpc::string_ref> pems = auth->FindPropertyValues("x509_pem_cert");
      if (!pems.empty()) {
        Result<tls::CertificateInfo> info =
            tls::ParseCertificate(std::string_view(pems[0].data(), pems[0].size()));
        if (info.ok()) peer = std::move(*info);
      }
    }
    if (!peer) return Unauthenticated("a node session needs the node's certificate");
    std::optional<api::Principal> who =
        sessions_.dispatcher_.Authenticate(std::string_view(bearer).substr(7), &*peer);
    if (!who) return Unauthenticated("berthd does not know this node's credential");
    who = api::BindToCertificate(std::move(*who), &*peer);
    switch (who->kind) {
      case api::Principal::Kind::kNode:
        node_ = who->node;
        return grpc::Status::OK;
      case api::Principal::Kind::kRemovedNode:
        removed_ = true;
        return {grpc::StatusCode::PERMISSION_DENIED, who->refusal};
      case api::Principal::Kind::kRefused:
        return {grpc::StatusCode::PERMISSION_DENIED, who->refusal};
      case api::Principal::Kind::kUnverified:
        return {grpc::StatusCode::UNAVAILABLE, "this berthd replica does not lead"};
      default:
        return {grpc::StatusCode::PERMISSION_DENIED,
                "only a node opens a session, with its own credential"};
    }
  }
  static grpc::Status Unauthenticated(const std::string& why) {
    return {grpc::StatusCode::UNAUTHENTICATED, why};
  }

  void Refuse(const grpc::Status& status) {
    if (removed_) context_->AddTrailingMetadata("berth-error", api::kNodeRemovedCode);
    {
      std::lock_guard lock(mu_);
      ending_ = status;
      finished_ = true;
    }
    Finish(status);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return End(grpc::Status::OK);  // the node closed its side, or the call ended
    if (Status handled = Handle(in_); !handled.ok()) return End(ToGrpc(handled));
    StartRead(&in_);
    Pump();
  }

  // Answered when the answer changed (a new CA digest, period or epoch), or
  // when the node asks (seq) to time its round trip: the assignments come
  // pushed, so a heartbeat is one read.
  Status Heartbeat(const pb::Heartbeat& heartbeat) {
    // A monotonic clock's wait; more than an hour is not a round trip.
    constexpr int64_t kLongestRoundTripNs = int64_t{3600} * 1'000'000'000;
    if (heartbeat.round_trip_ns() > 0 && heartbeat.round_trip_ns() <= kLongestRoundTripNs)
      sessions_.heartbeat_round_trips_.Observe(std::chrono::nanoseconds(heartbeat.round_trip_ns()));
    Result<Json> beat = sessions_.dispatcher_.Heartbeat(node_);
    if (!beat.ok()) return beat.status();
    sessions_.hooks_.stamp(*beat);
    std::string json = beat->dump();
    {
      std::lock_guard lock(mu_);
      if (json == last_heartbeat_) {
        if (heartbeat.seq() == 0) return Status::Ok();
        json.clear();
      } else {
        last_heartbeat_ = json;
      }
    }
    pb::ManagerMessage out;
    out.mutable_heartbeat()->set_json(std::move(json));
    out.mutable_heartbeat()->set_seq(heartbeat.seq());
    return Queue(std::move(out));
  }

  Status Handle(const pb::NodeMessage& message) {
    // As every node route: a replica that stopped leading ends the session
    // (UNAVAILABLE), so that the node finds the new leader instead of
    // heartbeating to a deposed one.
    BERTH_RETURN_IF_ERROR(sessions_.hooks_.serving());
    switch (message.kind_case()) {
      case pb::NodeMessage::kHello: {
        std::lock_guard lock(mu_);
        instance_ = message.hello().instance();
        since_ = message.hello().since();
        hello_ = dirty_ = true;
        return Status::Ok();
      }
      case pb::NodeMessage::kHeartbeat:
        return Heartbeat(message.heartbeat());
      case pb::NodeMessage::kReports: {
        pb::ManagerMessage out;
        out.mutable_reports()->set_seq(message.reports().seq());
        const Json body = Json::parse(message.reports().json(), nullptr, false);
        Result<Json> taken = body.is_discarded()
                                 ? Result<Json>(Status::InvalidArgument("reports: not JSON"))
                                 : TakeReports(sessions_.executor_, node_, body);
        if (taken.ok()) {
          out.mutable_reports()->set_json(taken->dump());
        } else {
          out.mutable_reports()->set_error(taken.status().message());
        }
        return Queue(std::move(out));
      }
      default:
        return Status::InvalidArgument("a node message of no known kind");
    }
  }

  Status Queue(pb::ManagerMessage message) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(message));
    return Status::Ok();
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(mu_);
      writing_ = false;
      if (!ok && !ending_) ending_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
    }
    Pump();
  }

  void OnDone() override {
    sessions_.Detach(node_, this);
    std::shared_ptr<Stream> self;
    {
      std::lock_guard lock(mu_);
      done_ = true;
      self = std::move(self_);
    }
  }

  // Starts the next write, or the finish, when none is in flight. Never
  // under mu_ when it calls into gRPC: a reaction may run inline.
  void Pump() {
    std::unique_lock lock(mu_);
    if (writing_ || finished_ || done_) return;
    if (!queue_.empty()) {
      out_ = std::move(queue_.front());
      queue_.pop_front();
    } else if (ending_) {
      finished_ = true;
      const grpc::Status status = *ending_;
      if (removed_) context_->AddTrailingMetadata("berth-error", api::kNodeRemovedCode);
      lock.unlock();
      Finish(status);
      return;
    } else if (dirty_ && hello_) {
      dirty_ = false;
      const AssignmentBatch batch =
          sessions_.executor_.Assignments(node_, instance_, since_, Duration{0});
      if (!batch.full && batch.changes.empty() && batch.instance == instance_) return;
      instance_ = batch.instance;
      since_ = batch.revision;
      Json json = EncodeAssignments(batch);
      sessions_.hooks_.stamp(json);
      out_.mutable_assignments()->set_json(json.dump());
    } else {
      return;
    }
    writing_ = true;
    lock.unlock();
    StartWrite(&out_);
  }

  NodeSessions& sessions_;
  grpc::CallbackServerContext* context_;
  std::string node_;     // set by Authenticate, before any other thread sees the stream
  std::string address_;  // set by Begin, as node_
  pb::NodeMessage in_;
  pb::ManagerMessage out_;  // the write in flight

  std::mutex mu_;
  std::shared_ptr<Stream> self_;
  std::deque<pb::ManagerMessage> queue_;
  std::string instance_;
  int64_t since_ = 0;
  std::string last_heartbeat_;  // the last heartbeat answer sent
  bool hello_ = false, dirty_ = false, writing_ = false, finished_ = false, done_ = false;
  bool removed_ = false;
  std::optional<grpc::Status> ending_;
};

class NodeSessions::Service final : public pb::NodeSessions::CallbackService {
 public:
  explicit Service(NodeSessions& sessions) : sessions_(sessions) {}
  grpc::ServerBidiReactor<pb::NodeMessage, pb::ManagerMessage>* Session(
      grpc::CallbackServerContext* context) override {
    auto stream = std::make_shared<Stream>(sessions_, context);
    stream->Begin(stream);
    return stream.get();
  }

 private:
  NodeSessions& sessions_;
};

NodeSessions::NodeSessions(NodeDispatcher& dispatcher, NodeExecutor& executor, NodeRouteHooks hooks,
                           NodeSessionsOptions options)
    : dispatcher_(dispatcher),
      executor_(executor),
      hooks_(std::move(hooks)),
      options_(std::move(options)),
      service_(std::make_unique<Service>(*this)) {}

NodeSessions::~NodeSessions() { Stop(); }

Status NodeSessions::Start() {
  using grpc::experimental::FileWatcherCertificateProvider;
  using grpc::experimental::TlsServerCredentialsOptions;
  auto provider = std::make_shared<FileWatcherCertificateProvider>(
      options_.key_file, options_.cert_file, options_.ca_file,
      static_cast<unsigned>(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::seconds>(options_.tls_refresh).count())));
  TlsServerCredentialsOptions tls(provider);
  tls.watch_root_certs();
  tls.watch_identity_key_cert_pairs();
  tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);

  auto ms = [](Duration d) { return static_cast<int>(d.count()); };
  grpc::ServerBuilder builder;
  session::SetServerDefaults(builder, options_.handshake_timeout);
  builder.AddListeningPort(session::HostPort(options_.host, options_.port),
                           grpc::experimental::TlsServerCredentials(tls), &port_);
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, ms(options_.keepalive));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, ms(options_.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ms(options_.idle_timeout));
  // A node's own keepalive pings (berth-node sends one every 30 s) are
  // welcome: gRPC's default would close a connection pinged more than
  // every 5 minutes.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  // A session is idle most of the time: small read buffers and TLS frames
  // keep its connection's memory small; large batches still pass, in more
  // reads.
  builder.AddChannelArgument(GRPC_ARG_TCP_READ_CHUNK_SIZE, 4096);
  builder.AddChannelArgument(GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 1024);
  builder.AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 64 * 1024);
  builder.AddChannelArgument(GRPC_ARG_TSI_MAX_FRAME_SIZE, 4096);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  // A node needs one stream (a newer one replaces it): a connection that
  // opens more is refused past a few, so one client cannot flood the
  // server with streams on one connection.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 4);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0)
    return session::CannotListen("node sessions", options_.host, options_.port);
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  for (int i = 0; i < std::max(1, options_.pushers); ++i)
    pushers_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "berth-push");  // for top -H and perf
      PushLoop();
    });
  return Status::Ok();
}

void NodeSessions::Stop() {
  std::vector<std::shared_ptr<Stream>> open;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && pushers_.empty()) return;
    stopping_ = true;
    for (auto& [node, stream] : streams_) open.push_back(stream->shared());
  }
  wake_.notify_all();
  for (std::thread& pusher : pushers_) pusher.join();
  pushers_.clear();
  for (auto& stream : open)
    if (stream) stream->End({grpc::StatusCode::UNAVAILABLE, "berthd is stopping"});
  open.clear();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
}

void NodeSessions::Published(const std::vector<std::string>& nodes, bool all) {
  {
    std::lock_guard lock(mu_);
    all_dirty_ = all_dirty_ || all;
    for (const std::string& node : nodes) MarkDirty(node);
  }
  wake_.notify_all();
}

// Streams a pusher takes at a time: the pushers share a publish to many
// nodes (gRPC's write path, TLS and the socket, is most of a push).
constexpr size_t kPushChunk = 256;

void NodeSessions::PushLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || all_dirty_ || !dirty_.empty(); });
    if (stopping_) return;
    if (std::exchange(all_dirty_, false))
      for (const auto& [node, stream] : streams_) MarkDirty(node);
    std::vector<std::shared_ptr<Stream>> due;
    while (!dirty_.empty() && due.size() < kPushChunk) {
      const std::string node = std::move(dirty_.front());
      dirty_.pop_front();
      queued_.erase(node);
      if (auto it = streams_.find(node); it != streams_.end()) due.push_back(it->second->shared());
    }
    if (!dirty_.empty()) wake_.notify_one();  // another pusher takes the next chunk
    lock.unlock();
    for (auto& stream : due)
      if (stream) stream->Changed();
    due.clear();
    lock.lock();
  }
}

// In the order published, once: a node published again while it waits
// keeps its place, so that none waits behind nodes published after it.
void NodeSessions::MarkDirty(const std::string& node) {
  if (queued_.insert(node).second) dirty_.push_back(node);
}

void NodeSessions::Close(const std::string& node) {
  std::shared_ptr<Stream> stream;
  {
    std::lock_guard lock(mu_);
    if (auto it = streams_.find(node); it != streams_.end()) stream = it->second->shared();
  }
  if (stream)
    stream->End({grpc::StatusCode::PERMISSION_DENIED, NodeDispatcher::RemovedMessage(node)}, true);
}

size_t NodeSessions::open() const {
  std::lock_guard lock(mu_);
  return streams_.size();
}

grpc::Status NodeSessions::Attach(const std::string& node, const std::string& address,
                                  Stream* stream) {
  std::shared_ptr<Stream> replaced;
  {
    std::lock_guard lock(mu_);
    Stream*& slot = streams_[node];
    const bool renewing = slot != nullptr && slot->address() == address;
    if (const int max = options_.max_per_address; max > 0 && !renewing) {
      if (auto open = per_address_.find(address);
          open != per_address_.end() && open->second >= max) {
        if (slot == nullptr) streams_.erase(node);
        return {grpc::StatusCode::RESOURCE_EXHAUSTED,
                "too many node sessions from " + address + ": " + std::to_string(max) +
                    " are open (berthd --max-sessions-per-address)"};
      }
    }
    if (slot != nullptr) {
      replaced = slot->shared();
      Uncount(slot->address());
    }
    slot = stream;
    ++per_address_[address];
  }
  if (replaced)
    replaced->End(
        {grpc::StatusCode::ABORTED, "replaced by a newer session of node '" + node + "'"});
  return grpc::Status::OK;
}

void NodeSessions::Detach(const std::string& node, Stream* stream) {
  std::lock_guard lock(mu_);
  if (auto it = streams_.find(node); it != streams_.end() && it->second == stream) {
    Uncount(stream->address());
    streams_.erase(it);
  }
}

void NodeSessions::Uncount(const std::string& address) {
  if (auto it = per_address_.find(address); it != per_address_.end() && --it->second <= 0)
    per_address_.erase(it);
}

// The reasons are the refusals' own words, which hold no secret.
void NodeSessions::LogRefusal(const std::string& address, const std::string& why) {
  const int64_t now = SteadyNowNs();
  std::lock_guard lock(log_mu_);
  if (last_log_ns_ != 0 && now - last_log_ns_ < 1'000'000'000) {
    ++unlogged_;
    return;
  }
  std::string more;
  if (unlogged_ > 0)
    more = " (and " + std::to_string(unlogged_) + " more refused since the last line)";
  std::fprintf(stderr, "berthd: refused a node session from %s: %s%s\n", address.c_str(),
               why.c_str(), more.c_str());
  last_log_ns_ = now;
  unlogged_ = 0;
}

}  // namespace berth::daemon
