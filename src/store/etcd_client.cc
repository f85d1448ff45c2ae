#include "store/etcd_client.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <limits>
#include <thread>
#include <unordered_map>

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "session/grpc_defaults.h"

namespace berth::store {

namespace pb = etcdserverpb;

struct EtcdClient::Member {
  std::string endpoint;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Watch::Stub> watch;
  std::unique_ptr<pb::Maintenance::Stub> maintenance;
};

namespace {

using Member = EtcdClient::Member;

// How often gRPC reads the TLS files again (a renewed certificate).
constexpr unsigned kTlsRefreshSeconds = 60;

std::shared_ptr<grpc::ChannelCredentials> CredentialsFor(const EtcdClientOptions& options) {
  if (options.ca_file.empty()) return grpc::InsecureChannelCredentials();
  using grpc::experimental::FileWatcherCertificateProvider;
  auto provider =
      options.cert_file.empty()
          ? std::make_shared<FileWatcherCertificateProvider>(options.ca_file, kTlsRefreshSeconds)
          : std::make_shared<FileWatcherCertificateProvider>(options.key_file, options.cert_file,
                                                             options.ca_file, kTlsRefreshSeconds);
  grpc::experimental::TlsChannelCredentialsOptions tls;
  tls.set_certificate_provider(provider);
  tls.watch_root_certs();
  if (!options.cert_file.empty()) tls.watch_identity_key_cert_pairs();
  tls.set_verify_server_certs(true);
  return grpc::experimental::TlsCredentials(tls);
}

std::unique_ptr<Member> Connect(const std::string& endpoint,
                                const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // Pings find a connection that died without a word (a member's machine
  // gone) while a call or a watch is open; etcd refuses pings more often
  // than every 5 s, and any without a call open. A quiet watch sends no
  // data: without the last setting gRPC would stop pinging after two.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A watch catching up gets up to 1,000 revisions in one message, each as
  // large as etcd's --max-request-bytes: no limit of ours (etcd's own Go
  // client takes up to 2 GiB too).
  args.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
  // A member that restarts is reconnected to at once, not after gRPC's
  // default backoff of 1 s growing to two minutes: while a channel backs
  // off, every call to that member fails without trying, and the member
  // that restarted may be the one etcd elects next.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  auto member = std::make_unique<Member>();
  member->endpoint = endpoint;
  member->channel = grpc::CreateCustomChannel(endpoint, credentials, args);
  member->kv = pb::KV::NewStub(member->channel);
  member->lease = pb::Lease::NewStub(member->channel);
  member->watch = pb::Watch::NewStub(member->channel);
  member->maintenance = pb::Maintenance::NewStub(member->channel);
  return member;
}

// The gateway's JSON mapping: proto field names, int64 as strings.
Status FromJson(const EtcdJson& body, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  const auto parsed = google::protobuf::util::JsonStringToMessage(body.dump(), message, options);
  if (!parsed.ok())
    return Status::InvalidArgument("not a valid etcd request: " + std::string(parsed.message()));
  return Status::Ok();
}

EtcdJson ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(message, &text, options);
  return EtcdJson::parse(text, nullptr, false);
}

// A context for one call: its deadline, and etcd's "hasleader" metadata: a
// member without a leader (an election, or no quorum) then refuses at once
// with "etcdserver: no leader" instead of holding the request until its
// timeout; a watch on it ends, and resumes on another member.
void Prepare(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) context.set_deadline(std::chrono::system_clock::now() + timeout);
  context.AddMetadata("hasleader", "true");
}

// One call's way there and back: the request decoded from JSON, the
// answer encoded to it.
using Unary = std::function<grpc::Status(Member&, grpc::ClientContext&, const EtcdJson& body,
                                         EtcdJson* answer)>;

// A request that does not decode is Berth's own mistake: refused as asked.
grpc::Status Undecodable(const Status& why) {
  return {grpc::StatusCode::INVALID_ARGUMENT, why.message()};
}

template <typename Request, typename Response, typename Stub>
Unary UnaryOf(std::unique_ptr<Stub> Member::*stub,
              grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*)) {
  return [stub, method](Member& m, grpc::ClientContext& context, const EtcdJson& body,
                        EtcdJson* answer) {
    Request request;
    if (Status decoded = FromJson(body, &request); !decoded.ok()) return Undecodable(decoded);
    Response response;
    grpc::Status status = ((*(m.*stub)).*method)(&context, request, &response);
    if (status.ok()) *answer = ToJson(response);
    return status;
  };
}

// One round of a lease's keepalive stream, answered as the gateway does.
grpc::Status KeepAliveOnce(Member& m, grpc::ClientContext& context, const EtcdJson& body,
                           EtcdJson* answer) {
  pb::LeaseKeepAliveRequest request;
  if (Status decoded = FromJson(body, &request); !decoded.ok()) return Undecodable(decoded);
  auto stream = m.lease->LeaseKeepAlive(&context);
  pb::LeaseKeepAliveResponse response;
  if (stream->Write(request) && stream->Read(&response)) {
    *answer = EtcdJson{{"result", ToJson(response)}};
    context.TryCancel();  // one round is all: the stream ends here
    (void)stream->Finish();
    return grpc::Status::OK;
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (status.ok()) return {grpc::StatusCode::UNAVAILABLE, "the keepalive stream ended at once"};
  return status;
}

const std::unordered_map<std::string_view, Unary>& Calls() {
  static const auto* calls = new std::unordered_map<std::string_view, Unary>{
      {"/v3/kv/compaction", UnaryOf(&Member::kv, &pb::KV::Stub::Compact)},
      {"/v3/lease/grant", UnaryOf(&Member::lease, &pb::Lease::Stub::LeaseGrant)},
      {"/v3/lease/revoke", UnaryOf(&Member::lease, &pb::Lease::Stub::LeaseRevoke)},
      {"/v3/lease/keepalive", KeepAliveOnce},
  };
  return *calls;
}

// The call never left: no connection could be made to the member (or its
// name did not resolve).
bool NotSent(const grpc::Status& status) {
  const std::string& message = status.error_message();
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         (message.find("failed to connect") != std::string::npos ||
          message.find("DNS resolution failed") != std::string::npos);
}

// Why a call failed, in words a user can act on.
std::string Describe(const Member& m, const grpc::Status& status, bool tls) {
  const std::string& message = status.error_message();
  if (!NotSent(status) || !tls) return m.endpoint + ": " + message;
  auto has = [&](const char* words) { return message.find(words) != std::string::npos; };
  std::string why;
  if (has("certificate verify failed") || has("Hostname Verification"))
    why = "etcd's certificate does not chain to the CA given, or does not name this host";
  else if (has("andshake") || has("SSL") || has("Ssl"))
    why =
        "the TLS handshake failed (etcd serves plaintext, or asks for a client certificate "
        "and none was given, or does not accept the one given)";
  // TLS 1.3 ends the handshake before etcd checks the client's
  // certificate: a refusal shows as a new connection closed at once.
  else if (has("Endpoint read failed") || has("Socket closed") || has("Connection reset") ||
           has("End of TCP stream"))
    why =
        "etcd closed the TLS connection without answering (it refused this client's "
        "certificate, or asks for one and none was given)";
  else
    return m.endpoint + ": " + message;
  return m.endpoint + ": " + why + " (gRPC: " + message + ")";
}

// etcd refused the request itself: trying elsewhere would not help.
bool RefusedAsAsked(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return true;
    default:
      return false;
  }
}

}  // namespace

int64_t EtcdInt(const EtcdJson& object, const char* field) {
  if (!object.is_object()) return 0;
  auto it = object.find(field);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return 0;
  try {
    return std::stoll(it->get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (uint8_t(prefix.back()) < 0xff) {
      ++prefix.back();
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  session::UseGrpcDefaults();
  const auto credentials = CredentialsFor(options_);
  for (const std::string& endpoint : options_.endpoints)
    members_.push_back(Connect(endpoint, credentials));
}

EtcdClient::~EtcdClient() = default;

Status EtcdClient::Invoke(const std::function<grpc::Status(Member&, grpc::ClientContext&)>& attempt,
                          bool read_only, bool* unknown, std::chrono::milliseconds timeout) {
  if (unknown != nullptr) *unknown = false;
  if (timeout.count() == 0) timeout = options_.request_timeout;
  const size_t n = members_.size();
  if (n == 0) return Status::InvalidArgument("no etcd endpoint given");
  const bool tls = !options_.ca_file.empty();
  const auto deadline = std::chrono::steady_clock::now() + options_.retry_for;
  const size_t first = preferred_.load();
  std::string why;
  for (size_t tries = 0;; ++tries) {
    const size_t e = (first + tries) % n;
    Member& m = *members_[e];
    grpc::ClientContext context;
    Prepare(context, timeout);
    const grpc::Status status = attempt(m, context);
    if (status.ok()) {
      preferred_.store(e);
      return Status::Ok();
    }
    const std::string& message = status.error_message();
    // etcd's space quota is used up (its NOSPACE alarm); nothing was
    // applied, and nothing will be until an operator frees space.
    if (message.find("database space exceeded") != std::string::npos)
      return Status::Unavailable("etcd: " + message + " (see docs/ha.md, \"etcd is full\")");
    if (RefusedAsAsked(status.error_code())) return Status::InvalidArgument("etcd: " + message);
    why = Describe(m, status, tls);
    // Refused before anything was proposed: no connection, or the member
    // has no leader (an election, or no quorum). Anything else may have
    // reached etcd's log.
    const bool unapplied = NotSent(status) || message.find("no leader") != std::string::npos;
    if (!unapplied && !read_only) {
      if (unknown != nullptr) *unknown = true;
      return Status::Unavailable("etcd at " + why + " (the write may or may not have applied)");
    }
    if ((tries + 1) % n == 0) {
      if (std::chrono::steady_clock::now() >= deadline)
        return Status::Unavailable("no etcd member could serve the request (last: " + why + ")");
      // Give an election (about a second on etcd's defaults) time to end.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

Result<pb::TxnResponse> EtcdClient::Txn(const pb::TxnRequest& request, bool read_only,
                                        bool* unknown) {
  pb::TxnResponse response;
  BERTH_RETURN_IF_ERROR(
      Invoke([&](Member& m,
                 grpc::ClientContext& context) { return m.kv->Txn(&context, request, &response); },
             read_only, unknown));
  return response;
}

Result<pb::RangeResponse> EtcdClient::Range(const pb::RangeRequest& request,
                                            std::chrono::milliseconds timeout) {
  pb::RangeResponse response;
  BERTH_RETURN_IF_ERROR(Invoke(
      [&](Member& m, grpc::ClientContext& context) {
        return m.kv->Range(&context, request, &response);
      },
      true, nullptr, timeout));
  return response;
}

Result<EtcdJson> EtcdClient::Call(std::string_view path, const EtcdJson& body, bool read_only,
                                  bool* unknown, std::chrono::milliseconds timeout) {
  const auto call = Calls().find(path);
  if (call == Calls().end())
    return Status::InvalidArgument("no such etcd call: " + std::string(path));
  EtcdJson answer;
  BERTH_RETURN_IF_ERROR(
      Invoke([&](Member& m,
                 grpc::ClientContext& context) { return call->second(m, context, body, &answer); },
             read_only, unknown, timeout));
  if (answer.is_discarded()) return Status::Unavailable("etcd's answer did not map to JSON");
  return answer;
}

// Every member at once, so that a member that hangs (stopped, or cut off)
// delays the look by the timeout, not each member after it.
std::vector<EtcdClient::RaftView> EtcdClient::RaftViews(std::chrono::milliseconds timeout) {
  struct Ask {  // declared in this order so that the reader is destroyed before its context
    grpc::ClientContext context;
    pb::StatusResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<pb::StatusResponse>> reader;
  };
  const size_t n = members_.size();
  grpc::CompletionQueue done;  // outlives the asks
  std::vector<std::unique_ptr<Ask>> asks;
  const auto deadline = std::chrono::system_clock::now() + timeout;
  for (const std::unique_ptr<Member>& m : members_) {
    // No "hasleader": a member without a leader answers too.
    Ask& ask = *asks.emplace_back(std::make_unique<Ask>());
    ask.context.set_deadline(deadline);
    ask.reader = m->maintenance->AsyncStatus(&ask.context, pb::StatusRequest(), &done);
    ask.reader->Finish(&ask.response, &ask.status, &ask);
  }
  std::vector<RaftView> views;
  void* tag = nullptr;
  bool ok = false;
  for (size_t answered = 0; answered < n && done.Next(&tag, &ok); ++answered) {
    const Ask& ask = *static_cast<const Ask*>(tag);
    if (ok && ask.status.ok())
      views.push_back(
          {ask.response.header().member_id(), ask.response.leader(), ask.response.raftterm()});
  }
  done.Shutdown();
  while (done.Next(&tag, &ok)) {
  }
  return views;
}

void EtcdClient::StreamHandle::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

Status EtcdClient::Watch(const pb::WatchRequest& request, StreamHandle& handle,
                         const std::function<bool(const pb::WatchResponse&)>& receive) {
  const size_t n = members_.size();
  const size_t first = preferred_.load();
  const bool tls = !options_.ca_file.empty();
  std::string why;
  for (size_t tries = 0; tries < n; ++tries) {
    Member& m = *members_[(first + tries) % n];
    grpc::ClientContext context;
    Prepare(context, std::chrono::milliseconds::zero());
    {
      std::lock_guard lock(handle.mu_);
      if (handle.cancelled_) return Status::Unavailable("the etcd stream was cancelled");
      handle.context_ = &context;
    }
    auto stream = m.watch->Watch(&context);
    bool stopped = false;
    if (stream->Write(request)) {
      pb::WatchResponse response;
      while (!stopped && stream->Read(&response)) stopped = !receive(response);
    }
    if (stopped) context.TryCancel();
    const grpc::Status status = stream->Finish();
    {
      std::lock_guard lock(handle.mu_);
      handle.context_ = nullptr;
      if (handle.cancelled_) return Status::Unavailable("the etcd stream was cancelled");
    }
    if (stopped) return Status::Ok();
    why = Describe(m, status, tls);
    if (NotSent(status)) continue;
    return Status::Unavailable("the etcd stream from " + why);
  }
  return Status::Unavailable("no etcd member accepted the stream (last: " + why + ")");
}

}  // namespace berth::store
