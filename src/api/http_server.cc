#include "api/http_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>

#include "api/document.h"

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
  }
  return "internal";
}

// The error for a 4xx/5xx that no handler explained (httplib's own answers).
Json DefaultError(const httplib::Request& req, int status, size_t max_body_bytes) {
  std::string code = "bad_request", message = "bad request";
  if (status == 404)
    code = "not_found", message = "no such endpoint: " + req.method + " " + req.path;
  if (status == 413)
    code = "payload_too_large",
    message = "request body larger than " + std::to_string(max_body_bytes) + " bytes";
  if (status >= 500) code = "internal", message = "internal error";
  return Json{{"error", {{"code", code}, {"message", message}}}};
}

// Compares in time independent of where the strings differ.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void Send(httplib::Response& res, const ApiResponse& response) {
  res.status = response.status;
  if (!response.text.empty() || !response.content_type.empty())
    res.set_content(response.text, response.content_type.c_str());
  else if (!response.body.is_null())
    res.set_content(response.body.dump(), "application/json");
}

}  // namespace

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
  }
  return 500;
}

Json ErrorBody(const Status& status) {
  return Json{{"error", {{"code", CodeName(status.code())}, {"message", status.message()}}}};
}

void MetricsText::Add(const char* name, const char* help, uint64_t value, const char* type) {
  text_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + std::to_string(value) + "\n";
}

Result<Json> ParseJsonBody(const std::string& body) {
  if (body.empty()) return Status::InvalidArgument("malformed JSON: the request body is empty");
  try {
    return Json::parse(body);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument("malformed JSON: " + JsonErrorMessage(e));
  }
}

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  http_->new_task_queue = [threads = options_.threads] {
    return new httplib::ThreadPool(static_cast<size_t>(std::max(1, threads)));
  };
  http_->set_tcp_nodelay(true);
  http_->set_keep_alive_max_count(1000);
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string header = req.get_header_value("Authorization");
    if (SameSecret(header, "Bearer " + options_.token))
      return httplib::Server::HandlerResponse::Unhandled;
    counters_.unauthorized.fetch_add(1, std::memory_order_relaxed);
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    const char* message = header.empty() ? "missing bearer token" : "wrong bearer token";
    res.set_content(Json{{"error", {{"code", "unauthorized"}, {"message", message}}}}.dump(),
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
  http_->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        res.set_content(DefaultError(req, res.status, options_.max_body_bytes).dump(),
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        res.status = 500;
        res.set_content(ErrorBody(Status::Internal("internal error")).dump(), "application/json");
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

void ApiServer::Route(const std::string& method, const std::string& pattern, ApiHandler handler) {
  auto adapter = [handler = std::move(handler)](const httplib::Request& req,
                                                httplib::Response& res) {
    ApiRequest request{req.method, req.path, req.body, {}, {}};
    for (const auto& [name, value] : req.params) request.query[name] = value;
    for (size_t i = 1; i < req.matches.size(); ++i) request.params.push_back(req.matches[i].str());
    Result<ApiResponse> response = handler(request);
    if (response.ok()) return Send(res, *response);
    res.status = HttpStatusOf(response.status().code());
    res.set_content(ErrorBody(response.status()).dump(), "application/json");
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
                                 std::to_string(options_.port));
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
