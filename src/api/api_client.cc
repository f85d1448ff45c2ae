#include "api/api_client.h"

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "tls/openssl.h"

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
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed (does it speak HTTPS, and take this client's certificate?)";
    case httplib::Error::BindIPAddress:
      return "cannot bind the local address";
    default:
      return "HTTP client error: " + httplib::to_string(error);
  }
}

std::string ServerRefusalIn(const httplib::Result& r, SSL_CTX* tls_context) {
  if (r || r.error() != httplib::Error::SSLConnection || tls_context == nullptr) return "";
  return tls::ServerRefusal(tls_context);
}

tls::Credentials TrustIn(const std::string& data_dir) {
  auto read = [&](const char* name) {
    std::ifstream in(data_dir + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  return {read("node-cert.pem"), read("node-key.pem"), read("ca.pem")};
}

std::string HostOf(const std::string& server) {
  std::string rest = server;
  if (const size_t scheme = rest.find("://"); scheme != std::string::npos)
    rest = rest.substr(scheme + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.rfind(':'));
}

std::string ErrorMessageIn(const Json& answer) {
  if (!answer.is_object() || !answer.contains("error") || !answer["error"].is_object()) return "";
  const Json& error = answer["error"];
  return error.contains("message") && error["message"].is_string() ? error["message"] : "";
}

std::string WithScheme(const std::string& server, bool tls) {
  if (server.find("://") != std::string::npos) return server;
  return (tls ? "https://" : "http://") + server;
}

namespace {

struct Endpoint {
  bool https = false;
  std::string host;
  int port = 0;
};

Result<Endpoint> ParseServer(const std::string& url) {
  Endpoint e;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    e.https = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return Status::InvalidArgument("berthd's address '" + url +
                                   "' is not http://HOST:PORT or https://HOST:PORT");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  const std::string port = colon == std::string::npos ? "" : rest.substr(colon + 1);
  e.host = colon == std::string::npos ? rest : rest.substr(0, colon);
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  e.port = e.https ? 443 : 80;
  if (!port.empty()) {
    const bool digits =
        port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
    e.port = digits ? std::stoi(port) : 0;
  }
  if (e.host.empty() || e.port <= 0 || e.port > 65535)
    return Status::InvalidArgument("berthd's address '" + url + "' has no valid host and port");
  return e;
}

// An HTTPS client verifying the server against `tls.trust_pem` and, with a
// certificate in `tls`, presenting it.
Result<std::unique_ptr<httplib::ClientImpl>> NewTlsClient(const Endpoint& e,
                                                          const tls::Credentials& tls) {
  if (tls.trust_pem.empty())
    return Status::InvalidArgument(
        "no CA to verify berthd's certificate with: give --tlscacert (or BERTH_CERT_PATH), or "
        "--data-dir pointing at berthd's data directory (its ca.pem)");
  if (Status s = tls::CheckCredentials(tls, false); !s.ok()) return s;
  std::unique_ptr<httplib::SSLClient> client;
  if (tls.cert_pem.empty()) {
    client = std::make_unique<httplib::SSLClient>(e.host, e.port);
  } else {
    tls::X509Ptr cert = tls::ReadCertificate(tls.cert_pem).value();
    tls::KeyPtr key = tls::ReadKey(tls.key_pem).value();
    client = std::make_unique<httplib::SSLClient>(e.host, e.port, cert.get(), key.get());
  }
  client->enable_server_certificate_verification(false);  // VerifyServer's instead
  BERTH_RETURN_IF_ERROR(tls::VerifyServer(client->ssl_context(), tls.trust_pem, e.host));
  return std::unique_ptr<httplib::ClientImpl>(std::move(client));
}

}  // namespace

ApiClient::ApiClient(const std::string& server, std::string token, int read_timeout_seconds,
                     const tls::Credentials& tls)
    : server_(WithScheme(server, !tls.trust_pem.empty())) {
  Result<Endpoint> endpoint = ParseServer(server_);
  Result<std::unique_ptr<httplib::ClientImpl>> client =
      !endpoint.ok()    ? Result<std::unique_ptr<httplib::ClientImpl>>(endpoint.status())
      : endpoint->https ? NewTlsClient(*endpoint, tls)
                        : std::make_unique<httplib::ClientImpl>(endpoint->host, endpoint->port);
  if (!client.ok()) {
    setup_error_ = client.status().message();
    // A client that says why at every call, rather than a half-made one.
    http_ = std::make_unique<httplib::ClientImpl>("127.0.0.1", 1);
    return;
  }
  http_ = std::move(*client);
  presents_certificate_ = endpoint->https && !tls.cert_pem.empty();
  if (endpoint->https) tls_context_ = static_cast<httplib::SSLClient&>(*http_).ssl_context();
  http_->set_bearer_token_auth(token);
  http_->set_connection_timeout(5);
  http_->set_read_timeout(read_timeout_seconds);
  // One connection for all of this client's calls: a new TCP connection per
  // call costs more than the call itself on loopback.
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);
}

ApiClient::~ApiClient() = default;
ApiClient::ApiClient(ApiClient&&) noexcept = default;

void ApiClient::Cancel() { http_->stop(); }

httplib::Result ApiClient::Send(const std::string& method, const std::string& path,
                                const std::string& text) {
  return method == "GET"     ? http_->Get(path.c_str())
         : method == "POST"  ? http_->Post(path.c_str(), text, "application/json")
         : method == "PATCH" ? http_->Patch(path.c_str(), text, "application/json")
                             : http_->Delete(path.c_str());
}

Result<Json> ApiClient::Call(const std::string& method, const std::string& path, const Json& body) {
  if (!setup_error_.empty()) return Status::InvalidArgument(setup_error_);
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
  return Answered(r, r ? r->body : std::string());
}

// A stream's lines are parsed as they come; an error answer's body is
// kept whole for Answered.
Status ApiClient::Stream(const std::string& path,
                         const std::function<bool(const Json& line)>& line) {
  if (!setup_error_.empty()) return Status::InvalidArgument(setup_error_);
  http_->stop();  // a fresh connection: the stream may outlast any idle one
  int status = 0;
  std::string pending, error_body;
  bool stopped = false, malformed = false;
  httplib::Result r = http_->Get(
      path.c_str(), httplib::Headers{},
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t size) {
        if (status >= 400) {
          error_body.append(data, size);
          return error_body.size() < (1 << 20);
        }
        pending.append(data, size);
        for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
          const Json parsed = Json::parse(pending.substr(0, end), nullptr, false);
          pending.erase(0, end + 1);
          if (parsed.is_discarded()) malformed = true;
          if (malformed || !line(parsed)) {
            stopped = true;
            return false;
          }
        }
        return true;
      });
  last_call_end_ = std::chrono::steady_clock::now();
  if (malformed) return Status::Unavailable("berthd sent a line that is not JSON");
  if (stopped || (r && status < 400)) return Status::Ok();
  Result<Json> answer = Answered(r, error_body);
  return answer.ok() ? Status::Ok() : answer.status();
}

Result<Json> ApiClient::Answered(const httplib::Result& r, const std::string& body) {
  if (const std::string why = ServerRefusalIn(r, tls_context_); !why.empty())
    return Status::Unavailable("cannot reach berthd at " + server_ +
                               ": its certificate does not verify against the CA given (" + why +
                               ": another cluster's berthd, a CA that was rotated: take its "
                               "ca.pem again, or an address its certificate does not name)");
  // Over TLS 1.3 a server that refuses the client's certificate says so
  // after the client's side of the handshake ended: the client sees the
  // connection close instead of an answer.
  if (!r && (r.error() == httplib::Error::Read || r.error() == httplib::Error::Write) &&
      presents_certificate_)
    return Status::Unavailable("cannot reach berthd at " + server_ +
                               ": the connection closed before an answer (over TLS: berthd may "
                               "have refused this client's certificate: expired, revoked or of "
                               "another CA)");
  if (!r)
    return Status::Unavailable("cannot reach berthd at " + server_ + ": " +
                               DescribeHttpError(r.error()));
  Json answer = Json::parse(body, nullptr, false);
  if (r->status < 400) {
    if (answer.is_discarded()) return Status::Unavailable("berthd sent a body that is not JSON");
    return answer;
  }
  std::string message = ErrorMessageIn(answer), code = "forbidden";
  if (message.empty()) message = "HTTP " + std::to_string(r->status);
  if (!answer.is_discarded() && answer.contains("error") && answer["error"].is_object()) {
    const Json& error = answer["error"];
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
