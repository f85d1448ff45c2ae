#include "api/http_agent_transport.h"

#include <httplib.h>

#include <unordered_map>
#include <utility>

#include "api/agent_codec.h"
#include "api/api_client.h"
#include "api/http_server.h"
#include "core/names.h"
#include "session/grpc_defaults.h"

namespace berth::api {
namespace {

// One keep-alive connection per thread and agent: httplib clients are not
// safe to share between threads, and reconnecting per request would cost
// more than the request.
httplib::Client& ThreadClient(const std::string& server, const std::string& token,
                              const std::string& trust_pem, const AgentClientIdentity& identity) {
  struct Made {
    std::unique_ptr<httplib::Client> client;
    std::chrono::steady_clock::time_point at;
  };
  thread_local std::unordered_map<std::string, Made> clients;
  Made& made = clients[server + '\n' + token + '\n' + identity.cert_file];
  const auto now = std::chrono::steady_clock::now();
  if (made.client && !identity.empty() && now - made.at >= AgentClientIdentity::kReread)
    made.client.reset();  // read the identity again: it may have been renewed
  if (!made.client) {
    made.client = std::make_unique<httplib::Client>(WithScheme(server, !trust_pem.empty()),
                                                    identity.cert_file, identity.key_file);
    made.at = now;
    httplib::Client* client = made.client.get();
    if (!trust_pem.empty() && client->ssl_context() != nullptr) {
      client->enable_server_certificate_verification(false);  // VerifyServer's instead
      (void)tls::VerifyServer(client->ssl_context(), trust_pem, HostOf(server));  // fails closed
    }
    client->set_bearer_token_auth(token.c_str());
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true);
  }
  return *made.client;
}

httplib::Headers EpochHeaders(int64_t epoch) {
  if (epoch == 0) return {};
  return {{kEpochHeader, std::to_string(epoch)}};
}

void SetTimeout(httplib::Client& client, Duration timeout) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout).count();
  client.set_connection_timeout(us / 1'000'000, us % 1'000'000);
  client.set_read_timeout(us / 1'000'000, us % 1'000'000);
  client.set_write_timeout(us / 1'000'000, us % 1'000'000);
}

// Why `client` got no answer: a refused agent certificate in OpenSSL's
// words, else httplib's error.
std::string NoAnswer(httplib::Client& client, const httplib::Result& r) {
  if (const std::string why = ServerRefusalIn(r, client.ssl_context()); !why.empty())
    return "its certificate does not verify against the agent's CA given (--agent-ca): " + why;
  return DescribeHttpError(r.error());
}

// The JSON of an answer; Unavailable for no answer, a non-JSON one or an
// error status.
Result<Json> ReadAnswer(const std::string& agent_id, httplib::Client& client,
                        const httplib::Result& r) {
  if (!r) return Status::Unavailable("agent " + agent_id + ": " + NoAnswer(client, r));
  Json answer = Json::parse(r->body, nullptr, false);
  if (answer.is_discarded())
    return Status::Unavailable("agent " + agent_id + ": an answer that is not JSON");
  if (r->status >= 400)
    return Status::Unavailable("agent " + agent_id + ": HTTP " + std::to_string(r->status) + " " +
                               ErrorMessageIn(answer));
  return answer;
}

// Decodes an agent's answer with `decode`. An answer that does not decode is
// the agent's failure (Unavailable, naming it), not a bad request of ours.
template <typename Decode>
auto DecodeAnswer(const std::string& agent_id, Result<Json> answer, Decode decode)
    -> decltype(decode(std::declval<const Json&>())) {
  if (!answer.ok()) return answer.status();
  auto decoded = decode(*answer);
  if (!decoded.ok())
    return Status::Unavailable("agent " + agent_id + ": " + decoded.status().message());
  return decoded;
}

}  // namespace

HttpAgentTransport::HttpAgentTransport(std::string server, std::string token, std::string trust_pem,
                                       AgentClientIdentity identity, std::string id,
                                       uint32_t node_count)
    : server_(std::move(server)),
      token_(std::move(token)),
      trust_pem_(std::move(trust_pem)),
      identity_(std::move(identity)),
      id_(std::move(id)),
      node_count_(node_count) {}

HttpAgentTransport::~HttpAgentTransport() = default;

Result<std::unique_ptr<HttpAgentTransport>> HttpAgentTransport::Connect(
    const std::string& server, const std::string& token, const std::string& trust_pem,
    AgentClientIdentity identity) {
  httplib::Client* client = nullptr;
  auto about = [&](const AgentClientIdentity& as) {
    client = &ThreadClient(server, token, trust_pem, as);
    SetTimeout(*client, std::chrono::seconds(5));
    return client->Get("/v1/agent");
  };
  // The identity only for an agent that asks for it (--manager-ca): one
  // that does not trust berthd's CA would fail the handshake on it.
  httplib::Result r = about({});
  if (r && r->status == 403 && !identity.empty()) {
    r = about(identity);
  } else {
    identity = {};
  }
  if (!r)
    return Status::Unavailable("cannot reach berth-agent at " + server + ": " +
                               NoAnswer(*client, r));
  const Json body = Json::parse(r->body, nullptr, false);
  if (r->status != 200 || body.is_discarded() || !body.contains("id") || !body["id"].is_string() ||
      !body.contains("nodes") || !body["nodes"].is_number_unsigned()) {
    const std::string why = ErrorMessageIn(body);
    return Status::Unavailable("berth-agent at " + server + " answered " +
                               std::to_string(r->status) + (why.empty() ? "" : ": " + why));
  }
  if (Status valid = CheckId(body["id"].get<std::string>()); !valid.ok())
    return Status::InvalidArgument("berth-agent at " + server + ": agent id " + valid.message());
  std::unique_ptr<HttpAgentTransport> transport(new HttpAgentTransport(
      server, token, trust_pem, identity, body["id"], body["nodes"].get<uint32_t>()));
  // Its gRPC service, on the host named here (the certificate names it).
  const int rpc_port = body.value("rpc_port", 0);
  if (rpc_port > 0 && rpc_port <= 65535 && !trust_pem.empty())
    transport->rpc_ = std::make_unique<AgentRpcClient>(transport->id_,
                                                       session::HostPort(HostOf(server), rpc_port),
                                                       token, trust_pem, transport->identity_);
  return transport;
}

Result<Json> HttpAgentTransport::Call(AgentRpcClient::Method method, const char* path,
                                      const Json* body, Duration timeout) {
  if (rpc_) return rpc_->Call(method, body ? *body : Json::object(), timeout, epoch_.load());
  return Https(path, body, timeout);
}

Result<Json> HttpAgentTransport::Https(const char* path, const Json* body, Duration timeout) {
  httplib::Client& client = ThreadClient(server_, token_, trust_pem_, identity_);
  SetTimeout(client, timeout);
  if (body == nullptr)
    return ReadAnswer(id_, client, client.Get(path, EpochHeaders(epoch_.load())));
  return ReadAnswer(
      id_, client,
      client.Post(path, EpochHeaders(epoch_.load()), body->dump(), "application/json"));
}

Result<agent::SampleResponse> HttpAgentTransport::Sample(const agent::SampleRequest& request,
                                                         Duration timeout) {
  return std::move(SampleMany({request}, timeout).front());
}

// One gRPC call for all of them, or one HTTPS request each.
std::vector<Result<agent::SampleResponse>> HttpAgentTransport::SampleMany(
    const std::vector<agent::SampleRequest>& requests, Duration timeout) {
  std::vector<Json> bodies;
  bodies.reserve(requests.size());
  for (const agent::SampleRequest& request : requests) {
    agent::SampleRequest bounded = request;
    bounded.budget = std::min(bounded.budget, timeout);
    bodies.push_back(EncodeSampleRequest(bounded));
  }
  auto decode = [&](const Json& answer) { return DecodeSampleResponse(answer, id_); };
  std::vector<Result<agent::SampleResponse>> answers;
  answers.reserve(requests.size());
  if (rpc_) {
    Result<std::vector<Json>> all = rpc_->Sample(bodies, timeout, epoch_.load());
    for (size_t i = 0; i < requests.size(); ++i)
      answers.push_back(all.ok() ? DecodeAnswer(id_, Result<Json>(std::move((*all)[i])), decode)
                                 : Result<agent::SampleResponse>(all.status()));
    return answers;
  }
  for (const Json& body : bodies)
    answers.push_back(DecodeAnswer(id_, Https("/v1/sample", &body, timeout), decode));
  return answers;
}

Result<agent::CommitResponse> HttpAgentTransport::Commit(const agent::CommitRequest& request,
                                                         Duration timeout) {
  const Json body = EncodeCommitRequest(request);
  return DecodeAnswer(id_, Call(AgentRpcClient::Method::kCommit, "/v1/commit", &body, timeout),
                      DecodeCommitResponse);
}

Result<size_t> HttpAgentTransport::Release(const std::vector<std::string>& task_ids,
                                           Duration timeout) {
  const Json body = EncodeIdList("tasks", task_ids);
  return DecodeAnswer(
      id_, Call(AgentRpcClient::Method::kRelease, "/v1/release", &body, timeout),
      [](const Json& answer) -> Result<size_t> {
        if (!answer.contains("released") || !answer["released"].is_number_unsigned())
          return Status::InvalidArgument("a release answer without 'released'");
        return answer["released"].get<size_t>();
      });
}

Result<std::vector<std::string>> HttpAgentTransport::Bindings(Duration timeout) {
  return DecodeAnswer(id_,
                      Call(AgentRpcClient::Method::kBindings, "/v1/bindings", nullptr, timeout),
                      [](const Json& answer) { return DecodeIdList(answer, "tasks"); });
}

Result<agent::RunsBatch> HttpAgentTransport::Runs(const std::string& instance, int64_t sequence,
                                                  Duration wait) {
  httplib::Client& client = ThreadClient(server_, token_, trust_pem_, identity_);
  SetTimeout(client, wait + std::chrono::seconds(10));
  const std::string path =
      "/v1/runs?instance=" + instance + "&sequence=" + std::to_string(sequence) + "&wait_ms=" +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
  httplib::Result r = client.Get(path.c_str());
  if (r && r->status == 404)
    return Status::NotFound("agent " + id_ + " runs no processes: its nodes are simulated");
  Result<agent::RunsBatch> batch = DecodeAnswer(id_, ReadAnswer(id_, client, r), DecodeRunsBatch);
  if (batch.ok()) node_count_.store(batch->nodes);
  return batch;
}

Result<Json> HttpAgentTransport::TaskLogs(const std::string& run, int64_t tail, int64_t after) {
  ApiClient client(server_, token_, 15, identity_.Load(trust_pem_));
  return client.Call("GET", "/v1/tasks/" + run + "/logs?tail=" + std::to_string(tail) +
                                "&after=" + std::to_string(after));
}

Result<Json> HttpAgentTransport::Nodes() {
  ApiClient client(server_, token_, 15, identity_.Load(trust_pem_));
  return client.Call("GET", "/v1/nodes");
}

Result<std::vector<std::string>> HttpAgentTransport::Eligible(const TaskSpec& spec,
                                                              Duration timeout) {
  const Json body = EncodeEligibleRequest(spec);
  return DecodeAnswer(id_, Call(AgentRpcClient::Method::kEligible, "/v1/eligible", &body, timeout),
                      [](const Json& answer) { return DecodeIdList(answer, "nodes"); });
}

}  // namespace berth::api
