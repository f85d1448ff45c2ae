#include "store/etcd_client.h"

#include <httplib.h>

#include <array>
#include <thread>

#include "tls/context.h"

namespace berth::store {
namespace {

// A failure this soon after sending on a kept-alive connection is its
// peer's close, not a slow answer.
constexpr int kClosedWithinMs = 50;

// A member without a leader (an election, or no quorum) then refuses at
// once with "etcdserver: no leader" instead of holding the request until
// its timeout; a watch on it ends, and resumes on another member.
const std::pair<const char*, const char*> kRequireLeader = {"Grpc-Metadata-hasleader", "true"};

// Why a request got no answer, in words.
std::string Describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection refused";
    case httplib::Error::Read:
      return "no answer in time (is the member overloaded, or cut off?)";
    case httplib::Error::Write:
      return "the connection closed while the request was sent";
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed (etcd serves plain HTTP, or it asks for a client "
             "certificate and none was given, or it does not accept the one given)";
    case httplib::Error::SSLServerVerification:
      return "etcd's certificate does not chain to the CA given, or does not name this host";
    default:
      return httplib::to_string(error);
  }
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::pair<std::string, int> HostPort(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) return {endpoint, 2379};
  return {endpoint.substr(0, colon), std::atoi(endpoint.c_str() + colon + 1)};
}

std::unique_ptr<httplib::Client> Connect(const std::string& endpoint, int read_timeout_seconds,
                                         const EtcdClientOptions& options) {
  auto [host, port] = HostPort(endpoint);
  std::unique_ptr<httplib::Client> client;
  if (options.ca_file.empty()) {
    client = std::make_unique<httplib::Client>(host, port);
  } else {
    tls::IgnoreSigpipe();
    client = std::make_unique<httplib::Client>("https://" + host + ":" + std::to_string(port),
                                               options.cert_file, options.key_file);
    client->set_ca_cert_path(options.ca_file);
    client->enable_server_certificate_verification(true);
  }
  client->set_connection_timeout(1, 0);
  client->set_read_timeout(read_timeout_seconds, 0);
  client->set_write_timeout(read_timeout_seconds, 0);
  client->set_keep_alive(true);
  // httplib sends a request's headers and body in separate writes: with
  // Nagle's algorithm on, the body waits for the delayed ACK of the headers
  // (40 ms on Linux), which made every etcd call take ~45 ms on loopback.
  client->set_tcp_nodelay(true);
  return client;
}

// etcd's words for a refused call: the gateway answers
// {"error": ..., "message": ..., "code": <gRPC code>}.
std::string EtcdMessage(const std::string& body, int status) {
  const EtcdJson answer = EtcdJson::parse(body, nullptr, false);
  if (answer.is_object() && answer.contains("message") && answer["message"].is_string())
    return answer["message"].get<std::string>();
  return "HTTP " + std::to_string(status);
}

// One POST and what came back. etcd's refusals end in an HTTP trailer
// (Grpc-Trailer-Content-Type) that cpp-httplib 0.11.4 cannot read: it fails
// the call as a read error after the body. So the body is collected as it
// arrives, and a refusal is taken from it.
struct Exchange {
  bool answered = false;
  bool clean = false;  // the connection may be used again
  int status = 0;
  std::string body;
  httplib::Error error = httplib::Error::Success;
};

Exchange Post(httplib::Client& http, std::string_view path, const std::string& text) {
  Exchange x;
  httplib::Request req;
  req.method = "POST";
  req.path = std::string(path);
  req.body = text;
  req.set_header("Content-Type", "application/json");
  req.set_header(kRequireLeader.first, kRequireLeader.second);
  req.content_receiver = [&x](const char* data, size_t size, uint64_t, uint64_t) {
    x.body.append(data, size);
    return true;
  };
  httplib::Response res;
  x.answered = x.clean = http.send(req, res, x.error);
  x.status = res.status;
  if (!x.answered && x.status >= 400 && !EtcdJson::parse(x.body, nullptr, false).is_discarded())
    x.answered = true;
  return x;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) |
                       (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  static const std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> value;
    value.fill(-1);
    for (int i = 0; i < 64; ++i) value[uint8_t(kAlphabet[i])] = int8_t(i);
    return value;
  }();
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t n = 0;
    int padding = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      if (c == '=' && i + 4 == text.size() && j >= 2) {
        ++padding;
        n <<= 6;
        continue;
      }
      const int8_t v = kValue[uint8_t(c)];
      if (v < 0 || padding > 0) return std::nullopt;
      n = (n << 6) | uint32_t(v);
    }
    out += char((n >> 16) & 0xff);
    if (padding < 2) out += char((n >> 8) & 0xff);
    if (padding < 1) out += char(n & 0xff);
  }
  return out;
}

int64_t EtcdInt(const EtcdJson& object, const char* field) {
  if (!object.is_object()) return 0;
  auto it = object.find(field);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return 0;
  try {
    return std::stoll(it->get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (uint8_t(prefix.back()) < 0xff) {
      ++prefix.back();
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // every key
}

EtcdClient::EtcdClient(EtcdClientOptions options)
    : options_(std::move(options)), idle_(options_.endpoints.size()) {}

EtcdClient::~EtcdClient() = default;

std::unique_ptr<httplib::Client> EtcdClient::Take(size_t endpoint, bool* reused) {
  *reused = false;
  {
    std::lock_guard lock(pool_mu_);
    std::vector<std::unique_ptr<httplib::Client>>& idle = idle_[endpoint];
    if (!idle.empty()) {
      std::unique_ptr<httplib::Client> client = std::move(idle.back());
      idle.pop_back();
      *reused = true;
      return client;
    }
  }
  return Connect(options_.endpoints[endpoint], options_.request_timeout_seconds, options_);
}

void EtcdClient::Give(size_t endpoint, std::unique_ptr<httplib::Client> client) {
  std::lock_guard lock(pool_mu_);
  idle_[endpoint].push_back(std::move(client));
}

Result<EtcdJson> EtcdClient::Call(std::string_view path, const EtcdJson& body, bool read_only,
                                  bool* unknown) {
  if (unknown != nullptr) *unknown = false;
  const std::string text = body.dump();
  const size_t n = options_.endpoints.size();
  const auto deadline = std::chrono::steady_clock::now() + options_.retry_for;
  const size_t first = preferred_.load();
  std::string why;
  for (size_t attempt = 0;; ++attempt) {
    const size_t e = (first + attempt) % n;
    const std::string& endpoint = options_.endpoints[e];
    bool reused = false;
    std::unique_ptr<httplib::Client> http = Take(e, &reused);
    const auto sent = std::chrono::steady_clock::now();
    const Exchange x = Post(*http, path, text);
    if (!x.answered) {
      why = endpoint + ": " + Describe(x.error);
      // TLS 1.3 ends the handshake before etcd checks the client's
      // certificate: a refusal shows as a new connection closed at once.
      if ((x.error == httplib::Error::Read || x.error == httplib::Error::Write) && !reused &&
          !options_.ca_file.empty() &&
          std::chrono::steady_clock::now() - sent <
              std::chrono::seconds(options_.request_timeout_seconds) / 2)
        why = endpoint +
              ": etcd closed the TLS connection without answering (it refused this client's "
              "certificate, or asks for one and none was given)";
      // A refused connection sent nothing. A kept-alive connection that
      // fails at once was closed by a member that stopped (killed or
      // restarted) before our request: that is tried elsewhere too. Any
      // other failure may have reached etcd.
      const bool closed = reused && std::chrono::steady_clock::now() - sent <
                                        std::chrono::milliseconds(kClosedWithinMs);
      if (x.error != httplib::Error::Connection && !closed && !read_only) {
        if (unknown != nullptr) *unknown = true;
        return Status::Unavailable("etcd at " + why + " (the write may or may not have applied)");
      }
    } else {
      if (x.clean) Give(e, std::move(http));
      if (x.status == 200) {
        preferred_.store(e);
        EtcdJson answer = EtcdJson::parse(x.body, nullptr, false);
        if (answer.is_discarded()) return Status::Unavailable("etcd at " + endpoint + ": not JSON");
        return answer;
      }
      const std::string message = EtcdMessage(x.body, x.status);
      // 429: etcd's space quota is used up (its NOSPACE alarm); nothing was
      // applied, and nothing will be until an operator frees space.
      if (x.status == 429)
        return Status::Unavailable("etcd: " + message + " (see docs/ha.md, \"etcd is full\")");
      if (x.status >= 400 && x.status < 500) return Status::InvalidArgument("etcd: " + message);
      why = endpoint + ": " + message;
      // etcd refused before proposing anything: the member has no leader
      // (an election, or no quorum).
      const bool unapplied = message.find("no leader") != std::string::npos;
      if (!unapplied && !read_only) {
        if (unknown != nullptr) *unknown = true;
        return Status::Unavailable("etcd at " + why);
      }
    }
    if ((attempt + 1) % n == 0) {
      if (std::chrono::steady_clock::now() >= deadline)
        return Status::Unavailable("no etcd member could serve the request (last: " + why + ")");
      // Give an election (about a second on etcd's defaults) time to end.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void EtcdClient::StreamHandle::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (http_ != nullptr) http_->stop();
}

Status EtcdClient::Stream(std::string_view path, const EtcdJson& body, int idle_timeout_seconds,
                          StreamHandle& handle,
                          const std::function<bool(const EtcdJson&)>& receive) {
  const size_t n = options_.endpoints.size();
  const size_t first = preferred_.load();
  std::string why;
  for (size_t attempt = 0; attempt < n; ++attempt) {
    const std::string& endpoint = options_.endpoints[(first + attempt) % n];
    std::unique_ptr<httplib::Client> http = Connect(endpoint, idle_timeout_seconds, options_);
    {
      std::lock_guard lock(handle.mu_);
      if (handle.cancelled_) return Status::Unavailable("the etcd stream was cancelled");
      handle.http_ = http.get();
    }
    httplib::Request req;
    req.method = "POST";
    req.path = std::string(path);
    req.body = body.dump();
    req.set_header("Content-Type", "application/json");
    req.set_header(kRequireLeader.first, kRequireLeader.second);
    std::string buffer;
    bool stopped = false;
    std::string broken;
    req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      buffer.append(data, size);
      for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
        const std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
        const EtcdJson message = EtcdJson::parse(line, nullptr, false);
        if (message.is_discarded()) {
          broken = "a line that is not JSON";
          return false;
        }
        if (!receive(message)) {
          stopped = true;
          return false;
        }
      }
      return true;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    const bool sent = http->send(req, res, error);
    {
      std::lock_guard lock(handle.mu_);
      handle.http_ = nullptr;
      if (handle.cancelled_) return Status::Unavailable("the etcd stream was cancelled");
    }
    if (stopped) return Status::Ok();
    if (!broken.empty()) return Status::Unavailable("etcd at " + endpoint + " sent " + broken);
    if (!sent && error == httplib::Error::Connection) {
      why = endpoint + ": " + httplib::to_string(error);
      continue;
    }
    if (!sent)
      return Status::Unavailable("the etcd stream from " + endpoint +
                                 " broke: " + httplib::to_string(error));
    return Status::Unavailable("the etcd stream from " + endpoint + " ended (HTTP " +
                               std::to_string(res.status) + ")");
  }
  return Status::Unavailable("no etcd member accepted the stream (last: " + why + ")");
}

}  // namespace berth::store
