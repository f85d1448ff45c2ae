#include "api/agent_rpc_client.h"

#include <grpcpp/grpcpp.h>

#include "session/agent_service.grpc.pb.h"
#include "session/grpc_defaults.h"
#include "tls/certificate.h"

namespace berth::api {

namespace pb = berth::agent::v1;

struct AgentRpcClient::Channel {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::ClusterAgent::Stub> stub;
  std::chrono::steady_clock::time_point made;
};

namespace {

constexpr int kMaxMessageBytes = 16 << 20;

void Prepare(grpc::ClientContext& context, const std::string& token, Duration timeout,
             int64_t epoch) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(timeout));
  context.AddMetadata("authorization", "Bearer " + token);
  if (epoch != 0) context.AddMetadata("x-berth-epoch", std::to_string(epoch));
}

Status Failed(const std::string& agent_id, const grpc::Status& status) {
  return Status::Unavailable("agent " + agent_id + ": " + status.error_message() + " (gRPC " +
                             std::to_string(static_cast<int>(status.error_code())) + ")");
}

Result<Json> ParseAnswer(const std::string& agent_id, const std::string& bytes) {
  Json answer = Json::parse(bytes, nullptr, false);
  if (answer.is_discarded())
    return Status::Unavailable("agent " + agent_id + ": an answer that is not JSON");
  return answer;
}

}  // namespace

tls::Credentials AgentClientIdentity::Load(const std::string& trust_pem) const {
  auto text = [](const std::string& path) {
    Result<std::string> read = tls::ReadPemFile(path);
    return read.ok() ? *read : std::string();
  };
  if (empty()) return {"", "", trust_pem};
  return {text(cert_file), text(key_file), trust_pem};
}

AgentRpcClient::AgentRpcClient(std::string agent_id, std::string target, std::string token,
                               std::string trust_pem, AgentClientIdentity identity)
    : agent_id_(std::move(agent_id)),
      target_(std::move(target)),
      token_(std::move(token)),
      trust_pem_(std::move(trust_pem)),
      identity_(std::move(identity)) {}

std::shared_ptr<AgentRpcClient::Channel> AgentRpcClient::Current() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (channel_ != nullptr &&
      (identity_.empty() || now - channel_->made < AgentClientIdentity::kReread))
    return channel_;
  const tls::Credentials own = identity_.Load(trust_pem_);
  grpc::SslCredentialsOptions ssl{own.trust_pem, own.key_pem, own.cert_pem};
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  session::UseGrpcDefaults();
  auto made = std::make_shared<Channel>();
  made->channel = grpc::CreateCustomChannel(target_, grpc::SslCredentials(ssl), args);
  made->stub = pb::ClusterAgent::NewStub(made->channel);
  made->made = now;
  channel_ = std::move(made);  // calls in flight keep the old one until they end
  return channel_;
}

AgentRpcClient::~AgentRpcClient() = default;

Result<Json> AgentRpcClient::Call(Method method, const Json& body, Duration timeout,
                                  int64_t epoch) {
  grpc::ClientContext context;
  Prepare(context, token_, timeout, epoch);
  pb::Payload in, out;
  in.set_json(body.dump());
  const std::shared_ptr<Channel> channel = Current();
  pb::ClusterAgent::Stub& stub = *channel->stub;
  grpc::Status status;
  switch (method) {
    case Method::kCommit:
      status = stub.Commit(&context, in, &out);
      break;
    case Method::kRelease:
      status = stub.Release(&context, in, &out);
      break;
    case Method::kEligible:
      status = stub.Eligible(&context, in, &out);
      break;
    case Method::kBindings:
      status = stub.Bindings(&context, in, &out);
      break;
  }
  if (!status.ok()) return Failed(agent_id_, status);
  return ParseAnswer(agent_id_, out.json());
}

Result<std::vector<Json>> AgentRpcClient::Sample(const std::vector<Json>& requests,
                                                 Duration timeout, int64_t epoch) {
  grpc::ClientContext context;
  Prepare(context, token_, timeout, epoch);
  pb::SampleBatch batch;
  for (const Json& request : requests) batch.add_requests(request.dump());
  pb::SampleAnswers answers;
  if (grpc::Status status = Current()->stub->Sample(&context, batch, &answers); !status.ok())
    return Failed(agent_id_, status);
  if (static_cast<size_t>(answers.answers_size()) != requests.size())
    return Status::Unavailable("agent " + agent_id_ + ": " +
                               std::to_string(answers.answers_size()) + " sampling answers to " +
                               std::to_string(requests.size()) + " requests");
  std::vector<Json> parsed;
  parsed.reserve(requests.size());
  for (const std::string& bytes : answers.answers()) {
    Result<Json> answer = ParseAnswer(agent_id_, bytes);
    if (!answer.ok()) return answer.status();
    parsed.push_back(std::move(*answer));
  }
  return parsed;
}

}  // namespace berth::api
