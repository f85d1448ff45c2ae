#include "api/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/document.h"
#include "core/ascii.h"
#include "core/names.h"

namespace berth::api {
namespace {

// httplib 0.11 (compiled into Debian's libcpp-httplib) listens with a
// backlog of 5. A burst of new connections overflows that accept queue, the
// kernel drops SYNs (TcpExtListenOverflows), and each dropped one costs its
// client a 1 s retransmission: berthd_bench saw a few requests take 1.1 s.
// listen() on a listening socket sets a new backlog, so after binding, find
// the listening socket of `port` among this process's descriptors and raise
// its backlog to the system's maximum.
void RaiseListenBacklog(int port) {
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr) return;
  while (const dirent* entry = ::readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    int listening = 0;
    socklen_t size = sizeof listening;
    if (fd <= 0 || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 ||
        listening == 0)
      continue;
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) continue;
    int bound = -1;
    if (address.ss_family == AF_INET)
      bound = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
    else if (address.ss_family == AF_INET6)
      bound = ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
    if (bound == port) ::listen(fd, SOMAXCONN);
  }
  ::closedir(fds);
}

std::string_view CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kConflict:
      return "conflict";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kPermissionDenied:
      return "forbidden";
  }
  return "internal";
}

Json ErrorJson(std::string_view code, const std::string& message) {
  return Json{{"error", {{"code", code}, {"message", message}}}};
}

// The error for a 4xx/5xx that no handler explained (httplib's own answers).
Json DefaultError(const httplib::Request& req, int status, size_t max_body_bytes) {
  switch (status) {
    case 404:
      return ErrorJson("not_found", "no such endpoint: " + req.method + " " + Quoted(req.path));
    case 413:
      return ErrorJson("payload_too_large",
                       "request body larger than " + std::to_string(max_body_bytes) + " bytes");
    case 414:
      return ErrorJson("uri_too_long", "request line too long");
  }
  if (status >= 500) return ErrorJson("internal", "internal error");
  return ErrorJson("bad_request", "malformed HTTP request");
}

// The credentials of an `Authorization: Bearer <token>` header, or "" for
// another scheme. The scheme is case-insensitive (RFC 7235, section 2.1).
std::string_view BearerToken(std::string_view header) {
  const size_t space = header.find(' ');
  if (space == std::string_view::npos || !EqualsIgnoreCase(header.substr(0, space), "bearer"))
    return {};
  std::string_view token = header.substr(space);
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return token;
}

// A request body is JSON: with no Content-Type it is taken as JSON; any
// other media type is refused before the body is read. (curl -d sends
// application/x-www-form-urlencoded, which httplib would otherwise cap at
// 8 KiB with a 413.)
bool IsJsonOrAbsent(const std::string& content_type) {
  std::string_view media = content_type;
  media = media.substr(0, media.find(';'));
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  return media.empty() || EqualsIgnoreCase(media, "application/json");
}

bool CarriesBody(const httplib::Request& req) {
  return req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
}

// httplib 0.11 reads a POST, PUT, PATCH or DELETE request without
// Content-Length or Transfer-Encoding until the client closes, so `curl -X
// POST .../drain` hung and got a 400. RFC 7230 section 3.3.3: such a request
// has no body. Saying so with Content-Length: 0 lets httplib read nothing.
void NoBodyUnlessAnnounced(const httplib::Request& req) {
  if (CarriesBody(req)) return;
  // httplib hands the pre-routing handler a const view of its own non-const
  // request object; this header only tells it how much to read next.
  const_cast<httplib::Request&>(req).headers.emplace("Content-Length", "0");
}

// Only SO_REUSEADDR (a restarted server can bind while old connections are in
// TIME_WAIT). httplib's default also sets SO_REUSEPORT, with which a second
// server on the same port started and the kernel split requests between them.
void ExclusiveSocketOptions(int socket) {
  int yes = 1;
  ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

// Why `host:port` cannot be bound, by binding a probe socket the same way
// (httplib does not say).
std::string BindError(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); error != 0)
    return ::gai_strerror(error);
  std::string reason = "unknown error";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int probe = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (probe < 0) continue;
    ExclusiveSocketOptions(probe);
    const bool bound = ::bind(probe, a->ai_addr, a->ai_addrlen) == 0;
    reason = bound ? "the address became free; try again" : std::strerror(errno);
    ::close(probe);
    if (!bound) break;
  }
  ::freeaddrinfo(found);
  for (char& c : reason) c = AsciiLower(c);
  return reason;
}

// Text in an answer is valid UTF-8 by the decoders' rules; should anything
// else slip through, its bytes are replaced rather than failing the answer.
std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(Dump(body), "application/json");
}

void Send(httplib::Response& res, const ApiResponse& response) {
  res.status = response.status;
  for (const auto& [name, value] : response.headers) res.set_header(name, value);
  if (response.stream) {
    res.set_chunked_content_provider(response.content_type,
                                     [stream = response.stream](size_t, httplib::DataSink& sink) {
                                       bool ok = true;
                                       stream([&](std::string_view chunk) {
                                         ok = ok && sink.write(chunk.data(), chunk.size());
                                         return ok;
                                       });
                                       if (ok) sink.done();
                                       return ok;
                                     });
  } else if (!response.text.empty() || !response.content_type.empty())
    res.set_content(response.text, response.content_type.c_str());
  else if (!response.body.is_null())
    res.set_content(Dump(response.body), "application/json");
}

}  // namespace

// Compares in time independent of where the strings differ.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kConflict:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
    case StatusCode::kPermissionDenied:
      return 403;
  }
  return 500;
}

Json ErrorBody(const Status& status) {
  return Json{{"error", {{"code", CodeName(status.code())}, {"message", status.message()}}}};
}

Result<int64_t> QueryCount(const ApiRequest& r, const std::string& name, int64_t fallback) {
  const std::string text = r.Query(name);
  if (text.empty()) return fallback;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0)
    return Status::InvalidArgument(name + ": expected a non-negative integer, got '" +
                                   text.substr(0, 64) + "'");
  return value;
}

ApiResponse ErrorAnswer(int status, std::string_view code, const std::string& message) {
  return ApiResponse{status, ErrorJson(code, message), "", ""};
}

std::string MetricLabel(std::string_view name, std::string_view value) {
  std::string label = std::string(name) + "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') label += '\\';
    label += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return label + "\"";
}

void MetricsText::Add(const char* name, const char* help, uint64_t value, const char* type) {
  text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + std::to_string(value) + "\n";
}

namespace {

// A sample value as Prometheus reads it: integers without a fraction.
std::string SampleValue(double value) {
  if (std::isfinite(value) && std::fabs(value) < 9e18 &&
      value == static_cast<double>(static_cast<int64_t>(value)))
    return std::to_string(static_cast<int64_t>(value));
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

std::string WithLabels(const std::string& labels, const std::string& more = "") {
  const std::string all = labels.empty() ? more : more.empty() ? labels : labels + "," + more;
  return all.empty() ? "" : "{" + all + "}";
}

}  // namespace

void MetricsText::AddLabeled(const char* name, const char* help, const char* type,
                             const std::vector<std::pair<std::string, double>>& samples) {
  text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const auto& [labels, value] : samples)
    text_ += name + WithLabels(labels) + " " + SampleValue(value) + "\n";
}

void MetricsText::AddHistograms(
    const char* name, const char* help,
    const std::vector<std::pair<std::string, const Histogram*>>& histograms) {
  text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
  for (const auto& [labels, h] : histograms) {
    const std::vector<uint64_t> counts = h->Cumulative();
    for (size_t i = 0; i < counts.size(); ++i) {
      const std::string le = i < h->bounds().size() ? SampleValue(h->bounds()[i]) : "+Inf";
      text_ += std::string(name) + "_bucket" + WithLabels(labels, "le=\"" + le + "\"") + " " +
               std::to_string(counts[i]) + "\n";
    }
    text_ += std::string(name) + "_sum" + WithLabels(labels) + " " + SampleValue(h->sum_seconds()) +
             "\n" + name + "_count" + WithLabels(labels) + " " + std::to_string(counts.back()) +
             "\n";
  }
}

std::optional<double> MetricSample(std::string_view text, std::string_view sample) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.size() > sample.size() && line.starts_with(sample) && line[sample.size()] == ' ') {
      const std::string value(line.substr(sample.size() + 1));
      char* parsed = nullptr;
      const double number = std::strtod(value.c_str(), &parsed);
      if (parsed != value.c_str()) return number;
    }
    at = end + 1;
  }
  return std::nullopt;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

Result<Json> ParseJsonBody(const std::string& body) {
  if (body.empty()) return Status::InvalidArgument("invalid JSON: the request body is empty");
  return ParseJsonText(body);
}

namespace {

std::unique_ptr<httplib::Server> NewServer(const std::shared_ptr<tls::ServerTls>& tls) {
  if (!tls) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>([tls](SSL_CTX& ctx) {
    tls->Install(&ctx);
    return true;
  });
}

// A principal with a certificate it cannot go with, refused.
Principal Refused(std::string why) {
  return Principal{Principal::Kind::kRefused, "", std::move(why)};
}

}  // namespace

Principal BindToCertificate(Principal who, Peer peer) {
  const bool node_cert = peer != nullptr && peer->identity.role == tls::kRoleNode;
  if (node_cert && who.kind == Principal::Kind::kAdmin)
    return Refused("a node's certificate cannot make admin calls");
  if (who.kind != Principal::Kind::kNode) return who;
  if (!node_cert)
    return Refused("node '" + who.node +
                   "' must present its certificate with its credential (mutual TLS)");
  if (peer->identity.id != who.node)
    return Refused("the certificate is node '" + peer->identity.id + "''s, the credential node '" +
                   who.node + "''s");
  return who;
}

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), http_(NewServer(options_.tls)) {
  http_->new_task_queue = [threads = options_.threads] {
    return new httplib::ThreadPool(static_cast<size_t>(std::max(1, threads)));
  };
  http_->set_tcp_nodelay(true);
  // A keep-alive connection holds a worker thread while it is open, so
  // clients beyond the thread count wait for one: closing a connection after
  // 100 requests or 1 s idle (the client reconnects) bounds that wait. An
  // idle one also costs its thread a wakeup every 10 ms (httplib polls it).
  http_->set_keep_alive_max_count(100);
  http_->set_keep_alive_timeout(1);
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_socket_options(ExclusiveSocketOptions);
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    NoBodyUnlessAnnounced(req);
    const std::string header = req.get_header_value("Authorization");
    const bool open = req.method == "GET" && std::find(public_paths_.begin(), public_paths_.end(),
                                                       req.path) != public_paths_.end();
    if (!open && !Who(req)) {
      counters_.unauthorized.fetch_add(1, std::memory_order_relaxed);
      res.set_header("WWW-Authenticate", "Bearer");
      SendJson(res, 401,
               ErrorJson("unauthorized",
                         header.empty() ? "missing bearer token" : "wrong bearer token"));
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string content_type = req.get_header_value("Content-Type");
    if (req.get_header_value("Content-Length") != "0" && !IsJsonOrAbsent(content_type)) {
      SendJson(res, 415,
               ErrorJson("unsupported_media_type",
                         "request bodies are JSON: send Content-Type: application/json, not " +
                             Quoted(content_type)));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        res.set_content(Dump(DefaultError(req, res.status, options_.max_body_bytes)),
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  // A handler that throws has a bug; say where on standard error, since the
  // client is told no more than "internal error".
  http_->set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        std::fprintf(stderr, "internal error answering %s %s: %s\n", req.method.c_str(),
                     Quoted(req.path).c_str(), what.c_str());
        SendJson(res, 500, ErrorBody(Status::Internal("internal error")));
      });
  http_->set_logger([this](const httplib::Request&, const httplib::Response& res) {
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    if (res.status >= 500)
      counters_.server_errors.fetch_add(1, std::memory_order_relaxed);
    else if (res.status >= 400)
      counters_.client_errors.fetch_add(1, std::memory_order_relaxed);
  });
}

ApiServer::~ApiServer() { Stop(); }

std::optional<Principal> ApiServer::Authenticate(std::string_view token, Peer peer) const {
  std::optional<Principal> who;
  if (SameSecret(token, options_.token))
    who = Principal{};
  else if (options_.authenticate && (!token.empty() || peer != nullptr))
    who = options_.authenticate(token, peer);
  if (!who || !options_.tls) return who;
  if (who->kind == Principal::Kind::kAdmin && !options_.token_role.empty() &&
      (peer == nullptr || peer->identity.role != options_.token_role))
    return Refused("this token must come with a certificate of role " + options_.token_role +
                   " (mutual TLS)");
  return BindToCertificate(std::move(*who), peer);
}

std::optional<Principal> ApiServer::Who(const httplib::Request& req) const {
  std::optional<tls::CertificateInfo> peer;
  if (options_.tls) peer = tls::PeerOf(req.ssl);
  return Authenticate(BearerToken(req.get_header_value("Authorization")), peer ? &*peer : nullptr);
}

namespace {

bool Allows(Access access, const Principal& who) {
  switch (who.kind) {
    case Principal::Kind::kAdmin:
      return true;
    case Principal::Kind::kNode:
    case Principal::Kind::kUnverified:
      return access != Access::kAdmin;
    case Principal::Kind::kNodeJoin:
      return access == Access::kNodeJoin;
    case Principal::Kind::kRemovedNode:
    case Principal::Kind::kRefused:
      return false;
  }
  return false;
}

// 'method="GET",route="/v1/nodes/{id}"': the route's pattern with each
// group a name.
std::string RouteLabels(const std::string& method, const std::string& pattern) {
  std::string route;
  int depth = 0;
  for (char c : pattern) {
    if (c == '(' && depth++ == 0) route += "{id}";
    if (depth == 0) route += c;
    if (c == ')' && depth > 0) --depth;
  }
  return MetricLabel("method", method) + "," + MetricLabel("route", route);
}

}  // namespace

void ApiServer::Route(const std::string& method, const std::string& pattern, ApiHandler handler,
                      Access access) {
  if (access == Access::kPublic) public_paths_.push_back(pattern);
  auto serve = [this, access, handler = std::move(handler)](const httplib::Request& req,
                                                            httplib::Response& res) {
    // The pre-routing handler let only known tokens through; one revoked
    // since (a rotated node token) is refused here.
    std::optional<Principal> who =
        access == Access::kPublic ? std::optional<Principal>(Principal{}) : Who(req);
    if (!who || (who->kind == Principal::Kind::kUnverified && access == Access::kAdmin))
      return SendJson(res, 401, ErrorJson("unauthorized", "wrong bearer token"));
    if (who->kind == Principal::Kind::kRemovedNode)
      return SendJson(res, 403, ErrorJson(kNodeRemovedCode, who->refusal));
    if (who->kind == Principal::Kind::kRefused)
      return SendJson(res, 403, ErrorJson("forbidden", who->refusal));
    if (!Allows(access, *who))
      return SendJson(res, 403,
                      ErrorJson("forbidden", who->kind == Principal::Kind::kNodeJoin
                                                 ? "the node join token may only register a node"
                                                 : "a node's token may only register and "
                                                   "heartbeat its node, read its assignments and "
                                                   "report its tasks"));
    ApiRequest request{req.method,
                       req.path,
                       req.body,
                       {},
                       {},
                       std::move(*who),
                       req.get_header_value(kEpochHeader)};
    for (const auto& [name, value] : req.params) request.query[name] = value;
    for (size_t i = 1; i < req.matches.size(); ++i) request.params.push_back(req.matches[i].str());
    Result<ApiResponse> response = handler(request);
    if (response.ok()) return Send(res, *response);
    SendJson(res, HttpStatusOf(response.status().code()), ErrorBody(response.status()));
  };
  // Until the answer is ready to send (a stream's setup only).
  auto adapter = [this, serve = std::move(serve), labels = RouteLabels(method, pattern)](
                     const httplib::Request& req, httplib::Response& res) {
    const auto start = std::chrono::steady_clock::now();
    serve(req, res);
    request_durations_.With(labels + ",code=\"" + std::to_string(res.status) + "\"")
        .Observe(std::chrono::steady_clock::now() - start);
  };
  if (method == "GET")
    http_->Get(pattern, adapter);
  else if (method == "POST")
    http_->Post(pattern, adapter);
  else if (method == "PATCH")
    http_->Patch(pattern, adapter);
  else if (method == "PUT")
    http_->Put(pattern, adapter);
  else if (method == "DELETE")
    http_->Delete(pattern, adapter);
}

Status ApiServer::Start() {
  if (options_.token.empty()) return Status::InvalidArgument("the API token must not be empty");
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ <= 0) return Status::Unavailable("cannot listen on " + options_.host);
  } else {
    if (!http_->bind_to_port(options_.host, options_.port))
      return Status::Unavailable("cannot listen on " + options_.host + ":" +
                                 std::to_string(options_.port) + ": " +
                                 BindError(options_.host, options_.port));
    port_ = options_.port;
  }
  RaiseListenBacklog(port_);
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  // Stop is a no-op until the listener runs, so Start returns only once it does.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!http_->is_running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  if (!http_->is_running()) return Status::Unavailable("the HTTP listener did not start");
  return Status::Ok();
}

void ApiServer::Stop() {
  if (!thread_.joinable()) return;
  http_->stop();
  thread_.join();
}

}  // namespace berth::api
