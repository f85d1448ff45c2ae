#include "node/node_session.h"

#include <grpcpp/grpcpp.h>

#include <utility>

#include "session/grpc_defaults.h"
#include "session/node_session.grpc.pb.h"

namespace berth::node {

namespace pb = berth::session::v1;
using api::Json;

struct NodeSession::Call {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::NodeSessions::Stub> stub;
  std::chrono::system_clock::time_point connect_deadline;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<pb::NodeMessage, pb::ManagerMessage>> stream;
  bool finished = false;  // under write_mu_: no write after Finish
};

namespace {

// How a stream's end reads in the node API's terms (NodeAgent's checks).
Status EndOf(const grpc::Status& status, const std::string& error_code) {
  const std::string& why = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return Status::Unavailable("berthd ended the node session");
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status::PermissionDenied(error_code.empty() ? why : error_code + ": " + why);
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::InvalidArgument("unauthorized: " + why);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return Status::InvalidArgument(why);
    default:
      return Status::Unavailable("the node session ended: " + why);
  }
}

}  // namespace

grpc::ChannelArguments SessionChannelArguments(int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  // Keepalive: a connection cut by the network is noticed in 40 s even
  // when no heartbeat is due.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_TCP_READ_CHUNK_SIZE, 4096);
  args.SetInt(GRPC_ARG_TCP_MIN_READ_CHUNK_SIZE, 1024);
  args.SetInt(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, 64 * 1024);
  args.SetInt(GRPC_ARG_TSI_MAX_FRAME_SIZE, 4096);
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  return args;
}

NodeSession::NodeSession(NodeSessionOptions options)
    : options_(std::move(options)), call_(std::make_unique<Call>()) {}

NodeSession::~NodeSession() { (void)Close(); }

std::unique_ptr<NodeSession> NodeSession::Connect(NodeSessionOptions options) {
  session::UseGrpcDefaults();
  std::unique_ptr<NodeSession> session(new NodeSession(std::move(options)));
  const NodeSessionOptions& o = session->options_;
  grpc::SslCredentialsOptions ssl{o.tls.trust_pem, o.tls.key_pem, o.tls.cert_pem};
  Call& call = *session->call_;
  call.channel = grpc::CreateCustomChannel(o.target, grpc::SslCredentials(ssl),
                                           SessionChannelArguments(o.max_message_bytes));
  call.connect_deadline =
      std::chrono::system_clock::now() +
      std::chrono::duration_cast<std::chrono::system_clock::duration>(o.connect_timeout);
  (void)call.channel->GetState(true);  // starts connecting
  return session;
}

// A refused connection or failed handshake fails at once (gRPC would
// retry until the deadline), so that the node goes on without a session.
NodeSession::Progress NodeSession::Connecting() const {
  const grpc_connectivity_state state = call_->channel->GetState(true);
  if (state == GRPC_CHANNEL_READY) return Progress::kReady;
  if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN ||
      std::chrono::system_clock::now() >= call_->connect_deadline)
    return Progress::kFailed;
  return Progress::kConnecting;
}

bool NodeSession::WaitConnected(Duration timeout) const {
  const auto deadline =
      std::min(call_->connect_deadline,
               std::chrono::system_clock::now() +
                   std::chrono::duration_cast<std::chrono::system_clock::duration>(timeout));
  for (Progress p = Connecting(); p != Progress::kReady; p = Connecting()) {
    if (p == Progress::kFailed ||
        !call_->channel->WaitForStateChange(call_->channel->GetState(false), deadline))
      return false;
  }
  return true;
}

void NodeSession::Start(const std::string& instance, int64_t since) {
  Call& call = *call_;
  call.stub = pb::NodeSessions::NewStub(call.channel);
  call.context.AddMetadata("authorization", "Bearer " + options_.credential);
  call.stream = call.stub->Session(&call.context);
  pb::NodeMessage hello;
  hello.mutable_hello()->set_instance(instance);
  hello.mutable_hello()->set_since(since);
  {
    std::lock_guard lock(write_mu_);
    (void)Write(hello);  // a refusal shows as the stream's end
  }
  reader_ = std::thread([this] { ReadLoop(); });
}

Result<std::unique_ptr<NodeSession>> NodeSession::Open(NodeSessionOptions options) {
  std::unique_ptr<NodeSession> session = Connect(std::move(options));
  if (!session->WaitConnected(session->options_.connect_timeout))
    return Status::Unavailable("cannot open a node session with " + session->options_.target +
                               " (connection or TLS handshake failed)");
  session->Start(session->options_.instance, session->options_.since);
  return session;
}

bool NodeSession::Write(const pb::NodeMessage& message) {
  if (call_->finished || call_->stream == nullptr) return false;
  return call_->stream->Write(message);
}

Status NodeSession::Heartbeat() {
  pb::NodeMessage beat;
  {
    std::lock_guard lock(mu_);
    beat.mutable_heartbeat()->set_round_trip_ns(std::exchange(round_trip_ns_, 0));
    const auto now = std::chrono::steady_clock::now();
    if (!timed_sent_ || now - *timed_sent_ >= options_.time_heartbeats_every) {
      timed_seq_ = ++last_seq_;
      timed_sent_ = now;
      beat.mutable_heartbeat()->set_seq(timed_seq_);
    }
  }
  std::lock_guard lock(write_mu_);
  return Write(beat) ? Status::Ok() : Status::Unavailable("the node session ended");
}

Result<Json> NodeSession::Report(const Json& body, Duration timeout) {
  pb::NodeMessage message;
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    if (ended_) return Status::Unavailable("the node session ended");
    seq = next_seq_++;
    pending_[seq];
  }
  message.mutable_reports()->set_seq(seq);
  message.mutable_reports()->set_json(body.dump());
  bool written = false;
  {
    std::lock_guard lock(write_mu_);
    written = Write(message);
  }
  std::unique_lock lock(mu_);
  if (written) {
    answered_.wait_for(lock, timeout, [&] { return ended_ || pending_[seq].has_value(); });
  }
  std::optional<Result<Json>> answer = std::move(pending_[seq]);
  pending_.erase(seq);
  if (!answer) return Status::Unavailable("berthd did not answer the node's reports in time");
  return std::move(*answer);
}

void NodeSession::ReadLoop() {
  pb::ManagerMessage message;
  while (call_->stream->Read(&message)) {
    switch (message.kind_case()) {
      case pb::ManagerMessage::kAssignments:
        if (options_.on_assignments)
          options_.on_assignments(Json::parse(message.assignments().json(), nullptr, false));
        break;
      case pb::ManagerMessage::kHeartbeat: {
        const pb::HeartbeatAck& ack = message.heartbeat();
        {
          std::lock_guard lock(mu_);
          if (ack.seq() != 0 && ack.seq() == timed_seq_) {
            round_trip_ns_ = (std::chrono::steady_clock::now() - *timed_sent_).count();
            timed_seq_ = 0;
          }
        }
        // Empty: the answer has not changed.
        if (options_.on_heartbeat && !ack.json().empty())
          options_.on_heartbeat(Json::parse(ack.json(), nullptr, false));
        break;
      }
      case pb::ManagerMessage::kReports: {
        const pb::ReportsAck& ack = message.reports();
        std::lock_guard lock(mu_);
        auto it = pending_.find(ack.seq());
        if (it == pending_.end()) break;
        if (!ack.error().empty()) {
          it->second = Result<Json>(Status::PermissionDenied(ack.error()));
        } else {
          Json answer = Json::parse(ack.json(), nullptr, false);
          it->second = answer.is_discarded()
                           ? Result<Json>(Status::Unavailable("berthd's answer is not JSON"))
                           : Result<Json>(std::move(answer));
        }
        answered_.notify_all();
        break;
      }
      default:
        break;  // a kind this node does not know: a newer berthd's
    }
  }
  grpc::Status status;
  {
    std::lock_guard lock(write_mu_);
    call_->finished = true;
    status = call_->stream->Finish();
  }
  std::string code;
  const auto& trailers = call_->context.GetServerTrailingMetadata();
  if (auto it = trailers.find("berth-error"); it != trailers.end())
    code.assign(it->second.data(), it->second.size());
  {
    std::lock_guard lock(mu_);
    ended_ = true;
    end_ = EndOf(status, code);
  }
  answered_.notify_all();
  if (options_.on_end) options_.on_end();
}

bool NodeSession::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

Status NodeSession::Close() {
  if (!reader_.joinable()) {
    std::lock_guard lock(mu_);
    return end_.value_or(Status::Unavailable("the node session ended"));
  }
  call_->context.TryCancel();
  reader_.join();
  std::lock_guard lock(mu_);
  return end_.value_or(Status::Unavailable("the node session ended"));
}

}  // namespace berth::node
