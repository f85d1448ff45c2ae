#include "api/agent_rpc_client.h"

#include <grpcpp/grpcpp.h>

#include "session/agent_service.grpc.pb.h"
#include "session/grpc_defaults.h"

namespace berth::api {

namespace pb = berth::agent::v1;

struct AgentRpcClient::Channel {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::ClusterAgent::Stub> stub;
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

AgentRpcClient::AgentRpcClient(std::string agent_id, const std::string& target, std::string token,
                               const std::string& trust_pem)
    : agent_id_(std::move(agent_id)), token_(std::move(token)), channel_(new Channel) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = trust_pem;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  session::UseGrpcDefaults();
  channel_->channel = grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
  channel_->stub = pb::ClusterAgent::NewStub(channel_->channel);
}

AgentRpcClient::~AgentRpcClient() = default;

Result<Json> AgentRpcClient::Call(Method method, const Json& body, Duration timeout,
                                  int64_t epoch) {
  grpc::ClientContext context;
  Prepare(context, token_, timeout, epoch);
  pb::Payload in, out;
  in.set_json(body.dump());
  pb::ClusterAgent::Stub& stub = *channel_->stub;
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
  if (grpc::Status status = channel_->stub->Sample(&context, batch, &answers); !status.ok())
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
