#include "tls/context.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/sslerr.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>

#include "tls/openssl.h"

namespace berth::tls {

struct ServerTls::Loaded {
  X509Ptr cert;
  KeyPtr key;
  StorePtr trust;
};

void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

X509_STORE* NewTrustStore(const std::string& trust_pem) {
  IgnoreSigpipe();
  Result<std::vector<std::string>> roots = SplitBundle(trust_pem);
  if (!roots.ok()) return nullptr;
  X509_STORE* store = X509_STORE_new();
  for (const std::string& pem : *roots) {
    Result<X509Ptr> root = ReadCertificate(pem);
    if (!root.ok() || X509_STORE_add_cert(store, root->get()) != 1) {
      X509_STORE_free(store);
      ERR_clear_error();
      return nullptr;
    }
  }
  return store;
}

namespace {

// Where a VerifyServer context keeps its last handshake's verify result
// (X509_V_OK as null): a number, so nothing to free.
int RefusalIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int NoteRefusal(int ok, X509_STORE_CTX* store) {
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (ssl != nullptr && (!ok || X509_STORE_CTX_get_error_depth(store) == 0)) {
    const intptr_t error = ok ? X509_V_OK : X509_STORE_CTX_get_error(store);
    SSL_CTX_set_ex_data(SSL_get_SSL_CTX(ssl), RefusalIndex(), reinterpret_cast<void*>(error));
  }
  return ok;
}

}  // namespace

Status VerifyServer(SSL_CTX* ctx, const std::string& trust_pem, const std::string& host) {
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NoteRefusal);
  X509_STORE* trust = NewTrustStore(trust_pem);
  // Fails closed: with no roots, every server is refused.
  SSL_CTX_set_cert_store(ctx, trust != nullptr ? trust : X509_STORE_new());  // frees the old
  if (trust == nullptr) return Status::InvalidArgument("the trust bundle does not parse");
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) {
    ERR_clear_error();
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
  SSL_CTX_set_ex_data(ctx, RefusalIndex(), nullptr);
  return Status::Ok();
}

std::string ServerRefusal(SSL_CTX* ctx) {
  const auto error = reinterpret_cast<intptr_t>(SSL_CTX_get_ex_data(ctx, RefusalIndex()));
  return error == X509_V_OK ? "" : X509_verify_cert_error_string(error);
}

Status CheckCredentials(const Credentials& c, bool needs_certificate) {
  if (Result<std::vector<std::string>> roots = SplitBundle(c.trust_pem); !roots.ok())
    return Status::InvalidArgument("the trust bundle: " + roots.status().message());
  if (c.cert_pem.empty() && !needs_certificate) return Status::Ok();
  return CheckKeyMatches(c.cert_pem, c.key_pem);
}

Result<std::shared_ptr<ServerTls>> ServerTls::Make(const Credentials& credentials) {
  auto tls = std::make_shared<ServerTls>();
  if (Status s = tls->Update(credentials); !s.ok()) return s;
  return tls;
}

Status ServerTls::Update(const Credentials& credentials) {
  if (Status s = CheckCredentials(credentials, /*needs_certificate=*/true); !s.ok()) return s;
  auto loaded = std::make_shared<Loaded>();
  loaded->cert = ReadCertificate(credentials.cert_pem).value();
  loaded->key = ReadKey(credentials.key_pem).value();
  loaded->trust.reset(NewTrustStore(credentials.trust_pem));
  std::lock_guard lock(mu_);
  current_ = std::move(loaded);
  return Status::Ok();
}

std::shared_ptr<const ServerTls::Loaded> ServerTls::Current() const {
  std::lock_guard lock(mu_);
  return current_;
}

namespace {

// Whether a line of this kind may be logged now: once a minute at most, so
// that a client that keeps trying does not flood the log.
bool MaySay(std::atomic<int64_t>& last_minute) {
  const int64_t now = std::chrono::duration_cast<std::chrono::minutes>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  return last_minute.exchange(now) != now;
}

std::string PeerAddress(const SSL* ssl) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  char text[INET6_ADDRSTRLEN] = "?";
  if (::getpeername(SSL_get_fd(ssl), reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    if (address.ss_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, text, sizeof text);
    else if (address.ss_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, text, sizeof text);
  }
  return text;
}

// A failed handshake, said in the server's log (never with a secret: only
// the reason and the peer's address). A client that speaks plain HTTP to
// the TLS port is also told so in HTTP, with the JSON error every Berth
// server answers, instead of a closed connection: OpenSSL has read its
// request line and fails the handshake with SSL_R_HTTP_REQUEST, and this
// answers on the socket before it closes.
void OnHandshakeFailure(const SSL* ssl, int where, int ret) {
  if ((where & SSL_CB_EXIT) == 0 || ret > 0 || SSL_is_init_finished(ssl)) return;
  const unsigned long error = ERR_peek_last_error();
  if (ERR_GET_LIB(error) != ERR_LIB_SSL) return;
  if (ERR_GET_REASON(error) == SSL_R_HTTP_REQUEST) {
    static const std::string kAnswer = [] {
      const std::string body =
          R"({"error":{"code":"https_required","message":"this port speaks HTTPS: call https://"}})";
      return "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: "
             "close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    const int fd = SSL_get_fd(ssl);
    if (fd >= 0) (void)::send(fd, kAnswer.data(), kAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    static std::atomic<int64_t> said{-1};
    if (MaySay(said))
      std::fprintf(stderr,
                   "refused a plain HTTP request on the HTTPS port from %s (answered 400)\n",
                   PeerAddress(ssl).c_str());
    return;
  }
  if (ERR_GET_REASON(error) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    static std::atomic<int64_t> said{-1};
    if (MaySay(said))
      std::fprintf(stderr, "refused a client certificate at the TLS handshake from %s: %s\n",
                   PeerAddress(ssl).c_str(),
                   X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
  }
}

}  // namespace

void ServerTls::Install(SSL_CTX* ctx) {
  IgnoreSigpipe();
  SSL_CTX_set_info_callback(ctx, OnHandshakeFailure);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // A server that asks for client certificates must name the context its
  // sessions belong to, or OpenSSL fails the handshake of a client that
  // offers to resume one: a browser's second connection did, and the
  // dashboard's script did not load.
  static constexpr unsigned char kSessionContext[] = "berth";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  // Ask for a client certificate; one that does not verify ends the
  // handshake, and none at all is left to the routes.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // Each handshake takes the credentials current when it starts. A
  // certificate callback can set the leaf, key and verify store per
  // connection, so Update needs no lock on the context itself.
  SSL_CTX_set_cert_cb(
      ctx,
      [](SSL* ssl, void* arg) -> int {
        std::shared_ptr<const Loaded> now = static_cast<ServerTls*>(arg)->Current();
        if (!now) return 0;
        return SSL_use_cert_and_key(ssl, now->cert.get(), now->key.get(), nullptr, 1) == 1 &&
               SSL_set1_verify_cert_store(ssl, now->trust.get()) == 1;
      },
      this);
}

std::optional<CertificateInfo> PeerOf(const SSL* ssl) {
  if (ssl == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  X509* peer = SSL_get0_peer_certificate(ssl);
  if (peer == nullptr) return std::nullopt;
  Result<CertificateInfo> info = ParseCertificate(WriteCertificate(peer));
  if (!info.ok()) return std::nullopt;
  return std::move(*info);
}

}  // namespace berth::tls
