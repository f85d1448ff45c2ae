// ApiServer: the HTTP/JSON front door of berthd (and later berth-agent),
// on cpp-httplib. It owns what every endpoint shares:
//   - bearer-token authentication on every route: a missing or wrong
//     `Authorization: Bearer <token>` (scheme in any case) is 401, counted
//     in counters(); a known token whose principal the route's Access does
//     not take is 403;
//   - request bodies: JSON (a Content-Type other than application/json is
//     415 before the body is read), at most max_body_bytes (413), parsed
//     within api::DocumentLimits (ParseJsonBody); a request without
//     Content-Length or Transfer-Encoding has an empty body (RFC 7230);
//   - errors as JSON: a handler's Status becomes 400 (InvalidArgument),
//     404 (NotFound), 409 (Conflict), 503 (Unavailable) or 500, with the body
//     {"error": {"code": "invalid_argument", "message": "..."}}; unknown
//     routes and every other 4xx/5xx get the same shape. A handler that
//     throws is a bug: 500, and the exception is written to stderr;
//   - an exclusive port: Start fails ("address already in use") when
//     another process listens there, never sharing it;
//   - TLS (docs/security.md) when options give a tls::ServerTls: HTTPS
//     only, and a client certificate, when one is presented, is verified at
//     the handshake and binds the request: a node's certificate goes only
//     with that node's credential (a node certificate with the admin token,
//     another node's credential or no token is 403), and a node's
//     credential only with its certificate.
// Handlers run on the server's worker threads, so they must be thread-safe.
// Route before Start; Start and Stop from one owning thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/json_fields.h"
#include "core/histogram.h"
#include "core/status.h"
#include "tls/certificate.h"
#include "tls/context.h"

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace berth::api {

// Who sent a request: the admin (the API token), or a node (docs/agent.md,
// "Credentials"): the cluster's node join token, or one node's own
// credential.
struct Principal {
  // kUnverified: a token this server cannot check itself (a berthd follower
  // does not hold the nodes' credentials); node routes only, whose handlers
  // send it to the leader.
  // kRemovedNode: the credential of a node removed from the cluster: every
  // route refuses it, 403 with code kNodeRemovedCode and `refusal`.
  // kRefused: a token and a certificate that do not go together; every
  // route refuses it, 403 forbidden with `refusal`.
  enum class Kind { kAdmin, kNodeJoin, kNode, kUnverified, kRemovedNode, kRefused };
  Kind kind = Kind::kAdmin;
  std::string node;          // kNode, kRemovedNode: the node it is (was)
  std::string refusal = {};  // kRemovedNode, kRefused: why it is refused, and what to do
};

// The verified client certificate of a request over TLS; null without one.
using Peer = const tls::CertificateInfo*;

// Binds a token's principal to the client certificate it came with (TLS
// only): a node's certificate makes no admin call, a node's credential
// needs its own node's certificate; otherwise kRefused, with why.
Principal BindToCertificate(Principal who, Peer peer);

// Whether two secrets are equal, in time independent of where they differ.
bool SameSecret(std::string_view a, std::string_view b);

// The error code of the 403 that tells a berth-node its node was removed
// from the cluster (docs/api.md): it stops asking.
inline constexpr const char* kNodeRemovedCode = "node_removed";

// Who may call a route; anyone else gets 403.
enum class Access {
  kAdmin,     // the API token only (the default)
  kNode,      // a node's credential (the handler checks it is that node's), or the admin
  kNodeJoin,  // the node join token too (registration)
  kPublic,    // anyone, without a token (the CA's public certificate)
};

struct ApiServerOptions {
  std::string host = "127.0.0.1";
  int port = 7480;                  // 0: any free port (see ApiServer::port)
  std::string token;                // the bearer token every request must carry; not empty
  size_t max_body_bytes = 1 << 20;  // larger request bodies get 413
  int threads = 8;                  // worker threads
  // Other bearer tokens: the principal a token stands for, or nullopt (401);
  // `peer` is the request's client certificate (a revoked one is the
  // callback's to refuse). Called on the server's threads. Unset: only
  // `token` is accepted.
  std::function<std::optional<Principal>(std::string_view token, Peer peer)> authenticate;
  // HTTPS with these credentials; null: plain HTTP.
  std::shared_ptr<tls::ServerTls> tls;
  // With tls: the role (certificate OU) a caller of `token` must also
  // present a verified certificate of, or 403. Default "": the token alone
  // (berth-agent --manager-ca sets "manager": berthd's certificate).
  std::string token_role;
};

// The header that carries a berthd leader's epoch on its calls to
// berth-agent (docs/ha.md): the agent refuses older epochs.
inline constexpr const char* kEpochHeader = "X-Berth-Epoch";

struct ApiRequest {
  std::string method, path, body;
  std::vector<std::string> params;           // the route pattern's captures, in order
  std::map<std::string, std::string> query;  // query parameters (the last of repeated ones)
  Principal principal;                       // who sent it
  std::string epoch;                         // its kEpochHeader, or ""
  // The query parameter `name`, or "".
  std::string Query(const std::string& name) const {
    auto it = query.find(name);
    return it == query.end() ? std::string() : it->second;
  }
};

struct ApiResponse {
  int status = 200;
  Json body;                 // sent as JSON unless `text` or `stream` is set
  std::string text;          // a plain-text body (metrics)
  std::string content_type;  // for `text` and `stream`
  // A streamed body (chunked): called once, on the request's worker thread,
  // after the handler returned; it writes until it is done or a write fails
  // (false: the client went away, or did not read for 5 s). It holds the
  // worker thread meanwhile, so it must end on its own (a time bound).
  using Write = std::function<bool(std::string_view chunk)>;
  std::function<void(const Write& write)> stream = {};
  // Headers besides the content type (the dashboard's security policy).
  std::vector<std::pair<std::string, std::string>> headers = {};
};

using ApiHandler = std::function<Result<ApiResponse>(const ApiRequest&)>;

struct ApiCounters {
  std::atomic<uint64_t> requests{0}, unauthorized{0}, client_errors{0}, server_errors{0};
};

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // method: GET, POST, PATCH, PUT or DELETE; pattern: a regular expression
  // over the path whose groups become ApiRequest::params.
  void Route(const std::string& method, const std::string& pattern, ApiHandler handler,
             Access access = Access::kAdmin);

  // Binds and starts serving on a background thread. Unavailable when the
  // address cannot be bound; InvalidArgument for an empty token.
  Status Start();
  // Stops accepting, finishes requests in flight, joins the thread. Idempotent.
  void Stop();

  int port() const { return port_; }
  const ApiCounters& counters() const { return counters_; }
  // How long the routes took to answer, by method, route and status
  // (until the answer is ready to send; a stream's setup only).
  const LabeledHistograms& request_durations() const { return request_durations_; }

 private:
  std::optional<Principal> Authenticate(std::string_view token, Peer peer) const;
  std::optional<Principal> Who(const httplib::Request& req) const;

  ApiServerOptions options_;
  std::vector<std::string> public_paths_;  // Access::kPublic routes' patterns
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  ApiCounters counters_;
  LabeledHistograms request_durations_;
};

// 'name="value"', the value escaped as Prometheus's text format asks.
std::string MetricLabel(std::string_view name, std::string_view value);

// Builds a Prometheus text-format (0.0.4) answer for GET /metrics.
class MetricsText {
 public:
  // type: "counter" or "gauge".
  void Add(const char* name, const char* help, uint64_t value, const char* type = "counter");
  // One sample per label set ('state="ready"'), under one HELP and TYPE.
  void AddLabeled(const char* name, const char* help, const char* type,
                  const std::vector<std::pair<std::string, double>>& samples);
  // Histograms in seconds (core/histogram.h), one per label set ("": none):
  // name_bucket{...,le="B"}, name_sum and name_count.
  void AddHistograms(const char* name, const char* help,
                     const std::vector<std::pair<std::string, const Histogram*>>& histograms);
  ApiResponse Response() const { return {200, nullptr, text_, "text/plain; version=0.0.4"}; }

 private:
  std::string text_;
};

// The value of `sample` in a text-format answer: the line that starts with
// it (a metric's name, with its labels as written: 'name{state="ready"}')
// and a space. nullopt when no line does, so a reader tells a metric that is
// missing (renamed, not exported) from one that is 0. For tests and
// benchmarks that read GET /metrics.
std::optional<double> MetricSample(std::string_view text, std::string_view sample);

// Whether `host` is a loopback address (127.x.x.x, ::1 or localhost): the
// only place a server may serve plain HTTP (--insecure-http).
bool IsLoopbackHost(const std::string& host);

// Parses a request body as JSON (api::ParseJsonText with the default
// DocumentLimits); InvalidArgument "invalid JSON: ..." saying what is wrong
// and where.
Result<Json> ParseJsonBody(const std::string& body);

// The answer of a handler whose result is a JSON body: `status` with it,
// or the error.
inline Result<ApiResponse> Answer(Result<Json> result, int status = 200) {
  if (!result.ok()) return result.status();
  return ApiResponse{status, std::move(*result), "", ""};
}

// Parses the request body (as ParseJsonBody), then answers with `action` on
// it: the shape of every route that takes a JSON body.
template <typename Action>
Result<ApiResponse> WithBody(const ApiRequest& request, Action action) {
  Result<Json> body = ParseJsonBody(request.body);
  if (!body.ok()) return body.status();
  return action(*body);
}

// A query parameter that is a non-negative integer, or `fallback` when
// absent; InvalidArgument naming it otherwise.
Result<int64_t> QueryCount(const ApiRequest& request, const std::string& name, int64_t fallback);

// The JSON error body of `status`, and its HTTP status code.
Json ErrorBody(const Status& status);
int HttpStatusOf(StatusCode code);
// An error answer with a code of its own (kNodeRemovedCode), in the shape
// of every error: {"error": {"code", "message"}}.
ApiResponse ErrorAnswer(int status, std::string_view code, const std::string& message);

}  // namespace berth::api
