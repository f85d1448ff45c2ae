#include "api/api_client.h"

#include <httplib.h>

#include <chrono>

namespace berth::api {

std::string DescribeHttpError(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection refused or host unreachable (is it running, on that address and port?)";
    case httplib::Error::ConnectionTimeout:
      return "no answer to the connection within the timeout";
    case httplib::Error::Read:
      return "the connection closed or timed out before a whole answer arrived";
    case httplib::Error::Write:
      return "the connection closed while the request was being sent";
    case httplib::Error::BindIPAddress:
      return "cannot bind the local address";
    default:
      return "HTTP client error: " + httplib::to_string(error);
  }
}

ApiClient::ApiClient(const std::string& server, std::string token, int read_timeout_seconds)
    : server_(server.find("://") == std::string::npos ? "http://" + server : server),
      http_(std::make_unique<httplib::Client>(server_)) {
  http_->set_bearer_token_auth(token.c_str());
  http_->set_connection_timeout(5);
  http_->set_read_timeout(read_timeout_seconds);
  // One connection for all of this client's calls: a new TCP connection per
  // call costs more than the call itself on loopback.
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);
}

ApiClient::~ApiClient() = default;

void ApiClient::Cancel() { http_->stop(); }

httplib::Result ApiClient::Send(const std::string& method, const std::string& path,
                                const std::string& text) {
  return method == "GET"     ? http_->Get(path.c_str())
         : method == "POST"  ? http_->Post(path.c_str(), text, "application/json")
         : method == "PATCH" ? http_->Patch(path.c_str(), text, "application/json")
                             : http_->Delete(path.c_str());
}

Result<Json> ApiClient::Call(const std::string& method, const std::string& path, const Json& body) {
  // Invalid UTF-8 is the caller's to refuse first; here it becomes U+FFFD
  // rather than an exception.
  const std::string text =
      body.is_null() ? std::string() : body.dump(-1, ' ', false, Json::error_handler_t::replace);
  // berthd closes a connection idle for 1 s, and this httplib does not
  // look before reusing one: a call after a pause would race the close.
  // Past 0.9 s idle the call opens a new connection, and a request that
  // could not be sent at all (the server had closed) is sent once more.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_call_end_ >= std::chrono::milliseconds(900)) http_->stop();
  httplib::Result r = Send(method, path, text);
  if (!r && r.error() == httplib::Error::Write) r = Send(method, path, text);
  last_call_end_ = std::chrono::steady_clock::now();
  if (!r)
    return Status::Unavailable("cannot reach berthd at " + server_ + ": " +
                               DescribeHttpError(r.error()));
  Json answer = Json::parse(r->body, nullptr, false);
  if (r->status < 400) {
    if (answer.is_discarded()) return Status::Unavailable("berthd sent a body that is not JSON");
    return answer;
  }
  std::string message = "HTTP " + std::to_string(r->status), code = "forbidden";
  if (!answer.is_discarded() && answer.contains("error") && answer["error"].is_object()) {
    const Json& error = answer["error"];
    if (error.contains("message") && error["message"].is_string()) message = error["message"];
    if (error.contains("code") && error["code"].is_string() && !error["code"].empty())
      code = error["code"];
  }
  if (r->status == 401) return Status::InvalidArgument("unauthorized: " + message);
  // "forbidden: ...", or a code of its own ("node_removed: ...").
  if (r->status == 403) return Status::PermissionDenied(code + ": " + message);
  if (r->status == 404) return Status::NotFound(message);
  if (r->status == 409) return Status::Conflict(message);
  if (r->status < 500) return Status::InvalidArgument(message);
  return Status::Unavailable(message);
}

}  // namespace berth::api
