#include "tls/context.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <thread>

#include "tls/authority.h"
#include "tls/openssl.h"

namespace berth::tls {
namespace {

const Timestamp kHandshakeNow =
    std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());

struct Pki {
  CertificateAuthority ca = CertificateAuthority::Create("c1", kHandshakeNow).value();
  KeyAndCert Leaf(const std::string& id, const char* role) const {
    return ca.Issue({{id, role, "c1"}, {"127.0.0.1"}, kHandshakeNow}).value();
  }
};

// An SSLServer on ServerTls that answers with the peer's identity.
class Server {
 public:
  explicit Server(std::shared_ptr<ServerTls> tls)
      : tls_(std::move(tls)), http_([this](SSL_CTX& ctx) {
          tls_->Install(&ctx);
          return true;
        }) {
    http_.Get("/who", [](const httplib::Request& req, httplib::Response& res) {
      std::optional<CertificateInfo> peer = PeerOf(req.ssl);
      res.set_content(peer ? peer->identity.role + "/" + peer->identity.id : "anonymous",
                      "text/plain");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
  }
  ~Server() {
    http_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  std::shared_ptr<ServerTls> tls_;
  httplib::SSLServer http_;
  int port_ = 0;
  std::thread thread_;
};

// GET /who as a client presenting `leaf` (or nothing) and trusting `trust`.
std::string Who(int port, const std::string& trust, const KeyAndCert* leaf) {
  std::unique_ptr<httplib::SSLClient> client;
  if (leaf) {
    X509Ptr cert = ReadCertificate(leaf->cert_pem).value();
    KeyPtr key = ReadKey(leaf->key_pem).value();
    client = std::make_unique<httplib::SSLClient>("127.0.0.1", port, cert.get(), key.get());
  } else {
    client = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  }
  client->set_ca_cert_store(NewTrustStore(trust));
  httplib::Result res = client->Get("/who");
  return res ? res->body : "error: " + httplib::to_string(res.error());
}

TEST(ServerTlsTest, ClientsWithAndWithoutCertificates) {
  Pki pki;
  KeyAndCert server = pki.Leaf("berthd", kRoleManager);
  Result<std::shared_ptr<ServerTls>> tls =
      ServerTls::Make({server.cert_pem, server.key_pem, pki.ca.cert_pem()});
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  Server s(*tls);
  KeyAndCert node = pki.Leaf("n1", kRoleNode);
  EXPECT_EQ(Who(s.port(), pki.ca.cert_pem(), &node), "node/n1");
  EXPECT_EQ(Who(s.port(), pki.ca.cert_pem(), nullptr), "anonymous");
  // A certificate from another CA ends the handshake.
  Pki other;
  KeyAndCert stranger = other.Leaf("n1", kRoleNode);
  EXPECT_EQ(Who(s.port(), pki.ca.cert_pem(), &stranger).rfind("error", 0), 0u);
  // A client that trusts another CA refuses the server.
  EXPECT_EQ(Who(s.port(), other.ca.cert_pem(), nullptr), "error: SSLServerVerification");
}

TEST(ServerTlsTest, UpdateAppliesToTheNextConnection) {
  Pki old_pki, new_pki;
  KeyAndCert server = old_pki.Leaf("berthd", kRoleManager);
  std::shared_ptr<ServerTls> tls =
      *ServerTls::Make({server.cert_pem, server.key_pem, old_pki.ca.cert_pem()});
  Server s(tls);
  KeyAndCert new_node = new_pki.Leaf("n2", kRoleNode);
  EXPECT_EQ(Who(s.port(), new_pki.ca.cert_pem(), &new_node), "error: SSLServerVerification");
  // Rotation: the server moves to the new root and trusts both.
  KeyAndCert renewed = new_pki.Leaf("berthd", kRoleManager);
  ASSERT_TRUE(tls->Update({renewed.cert_pem, renewed.key_pem,
                           old_pki.ca.cert_pem() + new_pki.ca.cert_pem()})
                  .ok());
  EXPECT_EQ(Who(s.port(), new_pki.ca.cert_pem(), &new_node), "node/n2");
  KeyAndCert old_node = old_pki.Leaf("n1", kRoleNode);
  EXPECT_EQ(Who(s.port(), new_pki.ca.cert_pem(), &old_node), "node/n1");
  EXPECT_FALSE(tls->Update({renewed.cert_pem, server.key_pem, new_pki.ca.cert_pem()}).ok());
}

// GET /who on a server presenting `leaf`, from a client set up by
// `configure`; "error: ..." with httplib's error when there is no answer.
std::string WhoAt(const KeyAndCert& leaf, const std::string& server_trust,
                  const std::function<void(httplib::SSLClient&)>& configure) {
  Server s(*ServerTls::Make({leaf.cert_pem, leaf.key_pem, server_trust}));
  httplib::SSLClient client("127.0.0.1", s.port());
  configure(client);
  httplib::Result res = client.Get("/who");
  return res ? res->body : "error: " + httplib::to_string(res.error());
}

// One TLS handshake with `version` as the highest, offering `session`
// (null: none): whether it succeeded, and the session to offer next.
struct Handshake {
  bool ok = false;
  SSL_SESSION* session = nullptr;
};
Handshake HandshakeWith(int port, int version, SSL_SESSION* session) {
  Handshake h;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_max_proto_version(ctx, version);
  SSL* ssl = SSL_new(ctx);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    SSL_set_fd(ssl, fd);
    if (session != nullptr) SSL_set_session(ssl, session);
    h.ok = SSL_connect(ssl) == 1;
    h.session = SSL_get1_session(ssl);
    SSL_shutdown(ssl);
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(fd);
  return h;
}

// A browser's second connection offers the first one's session. berthd
// asks for client certificates, and OpenSSL then refuses to resume without
// a session context: the handshake failed (the dashboard's script did not
// load).
TEST(ServerTlsTest, AClientOfferingAnEarlierSessionIsNotRefused) {
  Pki pki;
  KeyAndCert server = pki.Leaf("berthd", kRoleManager);
  Server s(ServerTls::Make({server.cert_pem, server.key_pem, pki.ca.cert_pem()}).value());
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    Handshake first = HandshakeWith(s.port(), version, nullptr);
    ASSERT_TRUE(first.ok) << version;
    Handshake second = HandshakeWith(s.port(), version, first.session);
    EXPECT_TRUE(second.ok) << version;
    SSL_SESSION_free(first.session);
    SSL_SESSION_free(second.session);
  }
}

// VerifyServer trusts the bundle it is given and nothing else: not a CA of
// the machine's default paths (SSL_CERT_FILE here, /etc/ssl/certs on a
// real machine), which httplib's own verification adds to the same store,
// and not a certificate of the cluster that names another host.
TEST(VerifyServerTest, TrustsTheBundleAloneAndChecksTheHost) {
  Pki cluster, machine;
  char path[] = "/tmp/berth-machine-ca-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string machine_trust = machine.ca.cert_pem();
  ASSERT_EQ(write(fd, machine_trust.data(), machine_trust.size()),
            static_cast<ssize_t>(machine_trust.size()));
  close(fd);
  ASSERT_EQ(setenv("SSL_CERT_FILE", path, 1), 0);
  const KeyAndCert publicly_trusted = machine.Leaf("berthd", kRoleManager);

  // httplib's verification with the cluster's store passes a server of the
  // machine's CA: why Berth's clients use VerifyServer.
  EXPECT_EQ(WhoAt(publicly_trusted, machine_trust,
                  [&](httplib::SSLClient& c) {
                    c.set_ca_cert_store(NewTrustStore(cluster.ca.cert_pem()));
                    c.enable_server_certificate_verification(true);
                  }),
            "anonymous");

  auto verified = [&](httplib::SSLClient& c) {
    c.enable_server_certificate_verification(false);
    ASSERT_TRUE(VerifyServer(c.ssl_context(), cluster.ca.cert_pem(), "127.0.0.1").ok());
  };
  EXPECT_EQ(WhoAt(publicly_trusted, machine_trust, verified), "error: SSLConnection");
  EXPECT_EQ(WhoAt(cluster.Leaf("berthd", kRoleManager), cluster.ca.cert_pem(), verified),
            "anonymous");
  const KeyAndCert elsewhere =
      cluster.ca.Issue({{"berthd", kRoleManager, "c1"}, {"10.9.9.9"}, kHandshakeNow}).value();
  EXPECT_EQ(WhoAt(elsewhere, cluster.ca.cert_pem(), verified), "error: SSLConnection");
  unsetenv("SSL_CERT_FILE");
  unlink(path);
}

TEST(VerifyServerTest, SaysWhyTheServerWasRefused) {
  Pki cluster, other;
  std::string refusal = "not set";
  auto check = [&](const KeyAndCert& leaf, const std::string& host) {
    Server s(*ServerTls::Make({leaf.cert_pem, leaf.key_pem, cluster.ca.cert_pem()}));
    httplib::SSLClient client("127.0.0.1", s.port());
    EXPECT_TRUE(VerifyServer(client.ssl_context(), cluster.ca.cert_pem(), host).ok());
    httplib::Result res = client.Get("/who");
    refusal = ServerRefusal(client.ssl_context());
    return static_cast<bool>(res);
  };
  EXPECT_TRUE(check(cluster.Leaf("berthd", kRoleManager), "127.0.0.1"));
  EXPECT_EQ(refusal, "");
  EXPECT_FALSE(check(other.Leaf("berthd", kRoleManager), "127.0.0.1"));
  EXPECT_EQ(refusal, "unable to get local issuer certificate");
  EXPECT_FALSE(check(cluster.Leaf("berthd", kRoleManager), "berthd.example"));
  EXPECT_EQ(refusal, "hostname mismatch");
  EXPECT_FALSE(VerifyServer(httplib::SSLClient("127.0.0.1", 1).ssl_context(), "junk", "h").ok());
}

}  // namespace
}  // namespace berth::tls
