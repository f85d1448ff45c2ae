// ApiClient: calls berthd's REST API (docs/api.md) for the `berth` CLI and
// tests. Answers are JSON; an HTTP error becomes the Status its JSON error
// body describes (400 and 401 InvalidArgument, 403 PermissionDenied whose
// message starts with the error's code, "forbidden: " or "node_removed: ",
// 404 NotFound, 409 Conflict, 5xx and connection failures Unavailable).
// One client per thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "api/json_fields.h"
#include "core/status.h"

namespace httplib {
class Client;
class Result;
enum class Error;
}  // namespace httplib

namespace berth::api {

class ApiClient {
 public:
  // server: "http://host:port" (or "host:port"). A call fails when no
  // answer came within `read_timeout_seconds` (a long poll needs more than
  // its wait).
  ApiClient(const std::string& server, std::string token, int read_timeout_seconds = 30);
  ~ApiClient();

  // method: GET, POST, PATCH or DELETE; body: JSON text for POST and PATCH.
  Result<Json> Call(const std::string& method, const std::string& path, const Json& body = nullptr);
  // Ends a Call in flight on another thread (it fails as Unavailable).
  void Cancel();

 private:
  httplib::Result Send(const std::string& method, const std::string& path,
                       const std::string& text);

  std::string server_;
  std::unique_ptr<httplib::Client> http_;
  std::chrono::steady_clock::time_point last_call_end_{};
};

// Why an HTTP call got no answer, in words a user can act on: "connection
// refused or host unreachable (is it running, on that address and port?)".
std::string DescribeHttpError(httplib::Error error);

}  // namespace berth::api
