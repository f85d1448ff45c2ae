#include "agent_server/agent_rpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>

#include "api/http_server.h"
#include "session/agent_service.grpc.pb.h"
#include "session/grpc_defaults.h"
#include "tls/certificate.h"

namespace berth::agent_server {

namespace pb = berth::agent::v1;
using api::Json;

namespace {

grpc::Status ToGrpc(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      return {grpc::StatusCode::INVALID_ARGUMENT, status.message()};
    case StatusCode::kConflict:
      return {grpc::StatusCode::FAILED_PRECONDITION, status.message()};
    default:
      return {grpc::StatusCode::UNAVAILABLE, status.message()};
  }
}

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(key);
  return found == metadata.end() ? "" : std::string(found->second.data(), found->second.size());
}

// The JSON of a payload, or why not (InvalidArgument).
Result<Json> Parse(const std::string& bytes) {
  Json body = Json::parse(bytes, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return Status::InvalidArgument("the payload is not a JSON object");
  return body;
}

}  // namespace

class AgentRpcServer::Service final : public pb::ClusterAgent::Service {
 public:
  Service(AgentCalls& calls, std::string token, bool manager_only)
      : calls_(calls), token_(std::move(token)), manager_only_(manager_only) {}

  grpc::Status Sample(grpc::ServerContext* context, const pb::SampleBatch* batch,
                      pb::SampleAnswers* answers) override {
    if (grpc::Status admitted = Admit(*context, true); !admitted.ok()) return admitted;
    for (const std::string& bytes : batch->requests()) {
      Result<Json> body = Parse(bytes);
      // Each sample may spend what is left of the caller's wait, less a
      // margin for the answer's way back, so late ones in a batch still
      // answer in time (with fewer nodes, when their nodes are scarce).
      const Duration left = std::chrono::duration_cast<Duration>(context->deadline() -
                                                                 std::chrono::system_clock::now());
      if (body.ok()) body = calls_.Sample(*body, std::max(Duration{1}, left - left / 5));
      if (!body.ok()) return ToGrpc(body.status());
      answers->add_answers(body->dump());
    }
    return grpc::Status::OK;
  }
  grpc::Status Commit(grpc::ServerContext* c, const pb::Payload* in, pb::Payload* out) override {
    return Serve(*c, true, *in, out, [this](const Json& b) { return calls_.Commit(b); });
  }
  grpc::Status Release(grpc::ServerContext* c, const pb::Payload* in, pb::Payload* out) override {
    return Serve(*c, true, *in, out, [this](const Json& b) { return calls_.Release(b); });
  }
  grpc::Status Eligible(grpc::ServerContext* c, const pb::Payload* in, pb::Payload* out) override {
    return Serve(*c, false, *in, out, [this](const Json& b) { return calls_.Eligible(b); });
  }
  grpc::Status Bindings(grpc::ServerContext* c, const pb::Payload*, pb::Payload* out) override {
    if (grpc::Status admitted = Admit(*c, false); !admitted.ok()) return admitted;
    out->set_json(calls_.Bindings().dump());
    return grpc::Status::OK;
  }

 private:
  // The token (with berthd's certificate, when asked for), and the epoch
  // of a call that changes something.
  grpc::Status Admit(const grpc::ServerContext& context, bool fenced) {
    const std::string authorization = Metadata(context, "authorization");
    if (!authorization.starts_with("Bearer ") ||
        !api::SameSecret(std::string_view(authorization).substr(7), token_))
      return {grpc::StatusCode::UNAUTHENTICATED, "a missing or wrong agent token"};
    if (manager_only_ && !FromManager(context))
      return {grpc::StatusCode::PERMISSION_DENIED,
              "the agent token must come with berthd's certificate (role manager)"};
    if (!fenced) return grpc::Status::OK;
    return ToGrpc(calls_.AdmitEpoch(Metadata(context, "x-berth-epoch")));
  }

  template <typename Call>
  grpc::Status Serve(const grpc::ServerContext& context, bool fenced, const pb::Payload& in,
                     pb::Payload* out, Call call) {
    if (grpc::Status admitted = Admit(context, fenced); !admitted.ok()) return admitted;
    Result<Json> answer = Parse(in.json());
    if (answer.ok()) answer = call(*answer);
    if (!answer.ok()) return ToGrpc(answer.status());
    out->set_json(answer->dump());
    return grpc::Status::OK;
  }

  // The handshake verified the certificate against berthd's CA only; its
  // subject (RFC 2253, as gRPC gives it) must say role manager, so that
  // berthd's nodes, whose certificates that CA signs too, are not let in.
  static bool FromManager(const grpc::ServerContext& context) {
    const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
    if (auth == nullptr) return false;
    for (const grpc::string_ref& subject : auth->FindPropertyValues("x509_subject")) {
      const std::string text(subject.data(), subject.size());
      for (size_t start = 0; start <= text.size();) {
        size_t end = text.find(',', start);
        while (end != std::string::npos && end > 0 && text[end - 1] == '\\')
          end = text.find(',', end + 1);  // an escaped comma inside a value
        if (end == std::string::npos) end = text.size();
        if (text.compare(start, end - start, std::string("OU=") + tls::kRoleManager) == 0)
          return true;
        start = end + 1;
      }
    }
    return false;
  }

  AgentCalls& calls_;
  const std::string token_;
  const bool manager_only_;
};

Result<std::unique_ptr<AgentRpcServer>> AgentRpcServer::Start(AgentCalls& calls,
                                                              AgentRpcOptions options) {
  using grpc::experimental::FileWatcherCertificateProvider;
  if (options.token.empty()) return Status::InvalidArgument("the agent token must not be empty");
  const auto refresh = static_cast<unsigned>(std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options.tls_refresh).count()));
  const bool mutual = !options.manager_ca_file.empty();
  auto provider = mutual
                      ? std::make_shared<FileWatcherCertificateProvider>(
                            options.key_file, options.cert_file, options.manager_ca_file, refresh)
                      : std::make_shared<FileWatcherCertificateProvider>(
                            options.key_file, options.cert_file, refresh);
  grpc::experimental::TlsServerCredentialsOptions tls(provider);
  tls.watch_identity_key_cert_pairs();
  if (mutual) tls.watch_root_certs();
  tls.set_cert_request_type(mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                   : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);

  std::unique_ptr<AgentRpcServer> server(new AgentRpcServer());
  server->service_ = std::make_unique<Service>(calls, options.token, mutual);
  grpc::ServerBuilder builder;
  session::SetServerDefaults(builder, options.handshake_timeout);
  builder.AddListeningPort(session::HostPort(options.host, options.port),
                           grpc::experimental::TlsServerCredentials(tls), &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Calls in flight on one connection (berthd's samplers, pipelines and
  // releases need a handful): a bound, so one client cannot flood it.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 256);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0)
    return session::CannotListen("agent calls", options.host, options.port);
  return server;
}

AgentRpcServer::~AgentRpcServer() { Stop(); }

void AgentRpcServer::Stop() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  server_.reset();
}

}  // namespace berth::agent_server
