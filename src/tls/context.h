// TLS for Berth's connections (docs/security.md): what a process presents
// and what it trusts, set on OpenSSL contexts.
//
// ServerTls is a server's side, swappable while it serves: a handshake
// takes the credentials current at that moment (a renewed certificate, or
// a trust bundle with a new root during `berth ca rotate`, applies to the
// next connection without a restart). Clients may present a certificate;
// one that does not verify against the trust bundle fails the handshake,
// and a connection without one is left to the routes to judge (the admin
// token needs none; a node's credential does).
#pragma once

#include <openssl/ssl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/status.h"
#include "tls/certificate.h"

namespace berth::tls {

struct Credentials {
  std::string cert_pem;   // this side's leaf; "" for a client that presents none
  std::string key_pem;    // its key
  std::string trust_pem;  // the roots the peer's certificate must chain to
};

// Checks that the three parse and belong together.
Status CheckCredentials(const Credentials& credentials, bool needs_certificate);

class ServerTls {
 public:
  static Result<std::shared_ptr<ServerTls>> Make(const Credentials& credentials);
  // Later handshakes use `credentials`; the same checks as Make.
  Status Update(const Credentials& credentials);
  // Sets `ctx` to take its certificate, key and trust from this at each
  // handshake, TLS 1.2 at least. `this` must outlive the context's use.
  void Install(SSL_CTX* ctx);

  struct Loaded;

 private:
  std::shared_ptr<const Loaded> Current() const;
  mutable std::mutex mu_;
  std::shared_ptr<const Loaded> current_;
};

// The verified certificate a peer presented on `ssl`, or nullopt (none, or
// not verified).
std::optional<CertificateInfo> PeerOf(const SSL* ssl);

// Ignores SIGPIPE in this process, once. OpenSSL writes to its sockets with
// write(2), which raises SIGPIPE when the peer has closed (a keep-alive
// connection the server dropped): without this, that kills the process.
// Every TLS client and server calls it.
void IgnoreSigpipe();

// A new X509_STORE holding the bundle's roots (the caller owns it; httplib's
// set_ca_cert_store takes it over). Null when the bundle does not parse.
X509_STORE* NewTrustStore(const std::string& trust_pem);

// Sets a client's context (an httplib client's ssl_context()) to verify
// the server at the handshake against `trust_pem` alone, with `host` (a
// DNS name or an IP address) among its certificate's names; a server that
// fails ends the handshake. Use it with httplib's own verification off:
// httplib's loads OpenSSL's default paths (the machine's public CAs) into
// the same store, so a server with a public CA's certificate for the host
// would pass it. InvalidArgument when the bundle does not parse (and the
// context then refuses every server).
Status VerifyServer(SSL_CTX* ctx, const std::string& trust_pem, const std::string& host);
// Why the last handshake on a VerifyServer context refused the server's
// certificate, in OpenSSL's words ("" when it did not).
std::string ServerRefusal(SSL_CTX* ctx);

}  // namespace berth::tls
