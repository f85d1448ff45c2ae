// ApiClient: calls berthd's REST API (docs/api.md) for the `berth` CLI and
// tests. Answers are JSON; an HTTP error becomes the Status its JSON error
// body describes (400 and 401 InvalidArgument, 403 PermissionDenied whose
// message starts with the error's code, "forbidden: " or "node_removed: ",
// 404 NotFound, 409 Conflict, 5xx and connection failures Unavailable).
// One client per thread.
//
// TLS (docs/security.md): an https:// server, or one without a scheme when
// `tls` names a trust bundle, is called over TLS, verifying berthd's
// certificate (its names must include the host) against `tls.trust_pem`,
// and presenting `tls.cert_pem` when set (mutual TLS, as nodes do).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "api/json_fields.h"
#include "core/status.h"
#include "tls/context.h"

namespace httplib {
class ClientImpl;
class Result;
enum class Error;
}  // namespace httplib

namespace berth::api {

class ApiClient {
 public:
  // server: "https://host:port", "http://host:port" or "host:port". A call
  // fails when no answer came within `read_timeout_seconds` (a long poll
  // needs more than its wait).
  ApiClient(const std::string& server, std::string token, int read_timeout_seconds = 30,
            const tls::Credentials& tls = {});
  ~ApiClient();
  ApiClient(ApiClient&&) noexcept;

  // method: GET, POST, PATCH or DELETE; body: JSON text for POST and PATCH.
  Result<Json> Call(const std::string& method, const std::string& path, const Json& body = nullptr);
  // GETs `path`, an answer of JSON lines (NDJSON: GET /v1/events), and
  // calls `line` with each as it comes, until `line` returns false or the
  // answer ends; an error answer or a failed connection as Call's. A
  // stream needs a line more often than the read timeout.
  Status Stream(const std::string& path, const std::function<bool(const Json& line)>& line);
  // Ends a Call in flight on another thread (it fails as Unavailable).
  void Cancel();

 private:
  httplib::Result Send(const std::string& method, const std::string& path, const std::string& text);
  // The answer as Call returns it: its JSON, or the Status of its failure.
  Result<Json> Answered(const httplib::Result& r, const std::string& body);

  std::string server_;
  std::unique_ptr<httplib::ClientImpl> http_;
  std::string setup_error_;  // why no call can be made (a bad URL or TLS setting), or ""
  bool presents_certificate_ = false;
  SSL_CTX* tls_context_ = nullptr;  // http_'s over HTTPS (tls::VerifyServer), or null
  std::chrono::steady_clock::time_point last_call_end_{};
};

// What a client on berthd's machine trusts: `data_dir`/ca.pem, berthd's CA
// bundle (empty when there is none), and, when `data_dir` is a
// berth-node's, its node-cert.pem and node-key.pem too.
tls::Credentials TrustIn(const std::string& data_dir);

// The URL `server` names with its scheme: "https://" when it has none and
// `tls` is true, else "http://".
std::string WithScheme(const std::string& server, bool tls);
// The host of a URL or "host:port", without brackets ("::1" for "[::1]:7480").
std::string HostOf(const std::string& server);
// The message of an API error body ({"error": {"message": ...}}, api.md),
// or "" when the body has none (whatever its shape).
std::string ErrorMessageIn(const Json& answer);

// Why an HTTP call got no answer, in words a user can act on: "connection
// refused or host unreachable (is it running, on that address and port?)".
std::string DescribeHttpError(httplib::Error error);
// OpenSSL's reason when `r` got no answer because the server's certificate
// did not verify on `tls_context` (a tls::VerifyServer client's, or null):
// "unable to get local issuer certificate". "" for any other failure.
std::string ServerRefusalIn(const httplib::Result& r, SSL_CTX* tls_context);

}  // namespace berth::api
