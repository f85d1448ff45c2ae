// Hostile input on the TLS surfaces (docs/security.md): a real berthd
// process whose CA is one this test made (--ca-cert/--ca-key), so that the
// test can sign what an attacker might hold: an expired certificate, a
// certificate of another CA, a CSR for another node. Each attempt gets a
// clear refusal, and none changes the store (its revision stays).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "api/api_client.h"
#include "process.h"
#include "store/test_dir.h"
#include "tls/authority.h"

namespace berth {
namespace {

using api::Json;
using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;

constexpr auto kBound = std::chrono::seconds(30);

Timestamp Now() { return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()); }

void WriteFile(const std::string& path, const std::string& text, std::filesystem::perms perms) {
  std::ofstream(path) << text;
  std::filesystem::permissions(path, perms);
}

// Sends `bytes` on a new plain TCP connection and returns what came back
// before the server closed it or `wait` passed.
std::string RawExchange(int port, const std::string& bytes, std::chrono::seconds wait) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{static_cast<time_t>(wait.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    if (!bytes.empty()) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    char chunk[1024];
    ssize_t n = 0;
    while ((n = ::recv(fd, chunk, sizeof chunk, 0)) > 0)
      answer.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return answer;
}

class TlsHostile : public testing::Test {
 protected:
  void SetUp() override {
    ca_ = std::make_unique<tls::CertificateAuthority>(
        tls::CertificateAuthority::Create("test-cluster", Now()).value());
    const std::string dir = dir_.path();
    using std::filesystem::perms;
    WriteFile(dir + "/root.pem", ca_->cert_pem(), perms::owner_read | perms::owner_write);
    WriteFile(dir + "/root-key.pem", ca_->key_pem(), perms::owner_read | perms::owner_write);
    berthd_ = std::make_unique<Process>(
        std::vector<std::string>{BERTHD_BINARY, "--data-dir", Data(), "--port", "0", "--ca-cert",
                                 dir + "/root.pem", "--ca-key", dir + "/root-key.pem"},
        Process::Stderr::kMerge);
    port_ = PortInLine(berthd_->WaitForLine("listening on", kBound));
    ASSERT_FALSE(port_.empty()) << "berthd did not start";
    token_ = FirstLine(Data() + "/token");
    Result<Json> join = Admin().Call("GET", "/v1/tokens/node");
    ASSERT_TRUE(join.ok()) << join.status().message();
    join_token_ = (*join)["token"];
  }

  std::string Data() const { return dir_.path() + "/berthd"; }
  std::string Url() const { return "https://127.0.0.1:" + port_; }
  api::ApiClient Admin() const {
    return api::ApiClient(Url(), token_, 30, {"", "", ca_->cert_pem()});
  }
  api::ApiClient As(const std::string& token, const tls::KeyAndCert& cert) const {
    return api::ApiClient(Url(), token, 30, {cert.cert_pem, cert.key_pem, ca_->cert_pem()});
  }
  int64_t Revision() {
    Result<Json> health = Admin().Call("GET", "/v1/health");
    return health.ok() ? health->value("revision", int64_t{-1}) : -1;
  }
  // A registration of node `id` whose CSR names `csr_id`; its key and the answer.
  Result<Json> Register(const std::string& id, const std::string& csr_id, std::string* key) {
    tls::KeyAndCsr csr = tls::NewKeyAndCsr(csr_id).value();
    if (key != nullptr) *key = csr.key_pem;
    const Json body = {{"hostname", id},         {"machine", "m-" + id},      {"version", "0.1.0"},
                       {"address", "127.0.0.1"}, {"endpoint", "127.0.0.1:1"}, {"csr", csr.csr_pem}};
    return api::ApiClient(Url(), join_token_, 30, {"", "", ca_->cert_pem()})
        .Call("POST", "/v1/node/register", body);
  }
  // berthd's whole log, once it stopped.
  std::string StopAndLog() {
    berthd_->Kill(SIGTERM);
    return berthd_->WaitExit(kBound).output;
  }

  store::TestDir dir_;
  std::unique_ptr<tls::CertificateAuthority> ca_;
  std::unique_ptr<Process> berthd_;
  std::string port_, token_, join_token_;
};

TEST_F(TlsHostile, AClientOfAnotherCaAndACertificateOfAnotherCaAreRefused) {
  const int64_t before = Revision();
  // berthd's certificate does not verify against another cluster's CA.
  tls::CertificateAuthority other = tls::CertificateAuthority::Create("other", Now()).value();
  api::ApiClient stranger(Url(), token_, 30, {"", "", other.cert_pem()});
  Result<Json> refused = stranger.Call("GET", "/v1/nodes");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("does not verify against the CA given"),
            std::string::npos)
      << refused.status().message();
  // A client certificate of another CA ends the handshake, even with the
  // admin token: nothing is answered.
  tls::KeyAndCert forged = other.Issue({{"n1", tls::kRoleNode, "other"}, {}, Now()}).value();
  Result<Json> forged_call = As(token_, forged).Call("GET", "/v1/nodes");
  ASSERT_FALSE(forged_call.ok());
  EXPECT_NE(forged_call.status().message().find("refused this client's certificate"),
            std::string::npos)
      << forged_call.status().message();
  EXPECT_NE(berthd_->WaitForLine("refused a client certificate at the TLS handshake", kBound), "");
  EXPECT_EQ(Revision(), before);
}

TEST_F(TlsHostile, AnExpiredCertificateIsRefusedAtTheHandshake) {
  std::string key;
  Result<Json> joined = Register("n1", "n1", &key);
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  const std::string credential = (*joined)["credential"];
  const int64_t before = Revision();
  // Signed by the cluster's own CA, for the right node, but past its life.
  const tls::KeyAndCsr csr = tls::NewKeyAndCsr("n1").value();
  const std::string expired_pem = ca_->Sign(csr.csr_pem, {{"n1", tls::kRoleNode, "test-cluster"},
                                                          {},
                                                          Now() - std::chrono::hours(48),
                                                          std::chrono::hours(24)})
                                      .value()
                                      .cert_pem;
  Result<Json> beat = As(credential, {csr.key_pem, expired_pem}).Call("POST", "/v1/node/heartbeat");
  ASSERT_FALSE(beat.ok());
  EXPECT_NE(beat.status().message().find("refused this client's certificate"), std::string::npos)
      << beat.status().message();
  EXPECT_NE(berthd_->WaitForLine("certificate has expired", kBound), "");
  // The node's real certificate works.
  EXPECT_TRUE(
      As(credential, {key, (*joined)["certificate"]}).Call("POST", "/v1/node/heartbeat").ok());
  EXPECT_EQ(Revision(), before);
}

TEST_F(TlsHostile, CsrsForAnotherNodeMalformedOrOversizedAreRefused) {
  const int64_t before = Revision();
  Result<Json> other = Register("n1", "n2", nullptr);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("names 'n2'"), std::string::npos)
      << other.status().message();
  for (const std::string& csr :
       {std::string("not a CSR"), std::string(20'000, 'A'),
        std::string("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE "
                    "REQUEST-----\n")}) {
    const Json body = {{"hostname", "n3"}, {"machine", "m-n3"}, {"csr", csr}};
    Result<Json> bad = api::ApiClient(Url(), join_token_, 30, {"", "", ca_->cert_pem()})
                           .Call("POST", "/v1/node/register", body);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().message();
    EXPECT_NE(bad.status().message().find("csr"), std::string::npos) << bad.status().message();
  }
  // Without a CSR: the reason, and nothing stored.
  Result<Json> none =
      api::ApiClient(Url(), join_token_, 30, {"", "", ca_->cert_pem()})
          .Call("POST", "/v1/node/register", Json{{"hostname", "n4"}, {"machine", "m-n4"}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("certificate signing request is required"),
            std::string::npos);
  EXPECT_EQ(Revision(), before);
  // A joined node asks to renew with a CSR naming another node.
  std::string key;
  Result<Json> joined = Register("n1", "n1", &key);
  ASSERT_TRUE(joined.ok());
  const int64_t joined_at = Revision();
  Result<Json> renew = As((*joined)["credential"], {key, (*joined)["certificate"]})
                           .Call("POST", "/v1/node/certificate",
                                 Json{{"csr", tls::NewKeyAndCsr("n9").value().csr_pem}});
  ASSERT_FALSE(renew.ok());
  EXPECT_NE(renew.status().message().find("names 'n9'"), std::string::npos);
  EXPECT_EQ(Revision(), joined_at);
  // Secrets stay out of berthd's log.
  const std::string log = StopAndLog();
  for (const std::string& secret :
       {token_, join_token_, (*joined)["credential"].get<std::string>()})
    EXPECT_EQ(log.find(secret), std::string::npos);
}

TEST_F(TlsHostile, ANodeCannotReportAnotherNodesTaskNorUseAnotherNodesCertificate) {
  std::string key1, key2;
  Result<Json> n1 = Register("n1", "n1", &key1), n2 = Register("n2", "n2", &key2);
  ASSERT_TRUE(n1.ok() && n2.ok());
  ASSERT_TRUE(
      Admin()
          .Call("POST", "/v1/services",
                Json{{"id", "web"},
                     {"replicas", 1},
                     {"task",
                      {{"command", "sleep"}, {"args", {"100"}}, {"constraints", {"node.id==n2"}}}}})
          .ok());
  ASSERT_TRUE(Admin().Call("GET", "/v1/health?wait=settled").ok());
  const Json tasks = (*Admin().Call("GET", "/v1/tasks?service=web"))["tasks"];
  ASSERT_EQ(tasks.size(), 1u);
  const std::string task = tasks[0]["id"];
  const int64_t before = Revision();
  // n1, with its own certificate and credential, reports n2's task.
  Result<Json> report =
      As((*n1)["credential"], {key1, (*n1)["certificate"]})
          .Call("POST", "/v1/node/status",
                Json{{"tasks", {{{"task", task}, {"state", "failed"}, {"message", "x"}}}}});
  ASSERT_FALSE(report.ok()) << report->dump();
  EXPECT_NE(report.status().message().find("is not assigned to node 'n1'"), std::string::npos)
      << report.status().message();
  // n1's credential with n2's certificate.
  Result<Json> swapped =
      As((*n1)["credential"], {key2, (*n2)["certificate"]}).Call("POST", "/v1/node/heartbeat");
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("the certificate is node 'n2''s"), std::string::npos)
      << swapped.status().message();
  EXPECT_EQ(Revision(), before);
  EXPECT_EQ((*Admin().Call("GET", "/v1/tasks/" + task))["state"], tasks[0]["state"]);
}

TEST_F(TlsHostile, PlainHttpIsToldToUseHttpsAndAStalledHandshakeIsDropped) {
  const int port = std::stoi(port_);
  const std::string answer = RawExchange(
      port, "GET /v1/nodes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token_ + "\r\n\r\n",
      std::chrono::seconds(10));
  EXPECT_EQ(answer.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find(R"("code":"https_required")"), std::string::npos) << answer;
  EXPECT_NE(berthd_->WaitForLine("refused a plain HTTP request", kBound), "");
  // A client that connects and never finishes its handshake: berthd drops
  // it after its read timeout and serves others meanwhile.
  const auto start = std::chrono::steady_clock::now();
  std::thread stalled([&] { RawExchange(port, "\x16\x03\x01", std::chrono::seconds(30)); });
  EXPECT_TRUE(Admin().Call("GET", "/v1/health").ok());
  stalled.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// gRPC's raw log format: "E1207 12:00:00.123456  77 file.cc:1501] ...".
bool RawGrpcLine(const std::string& line) {
  return line.size() > 5 && (line[0] == 'E' || line[0] == 'I' || line[0] == 'W') &&
         std::all_of(line.begin() + 1, line.begin() + 5, ::isdigit);
}

// A client that sends a node session's port bytes that are no TLS
// handshake: the session stays refused, and gRPC's complaint reaches
// berthd's log in berthd's voice, never as a raw gRPC line.
TEST_F(TlsHostile, AFailedSessionHandshakeIsLoggedAsBerthdsOwnLine) {
  const std::string sessions =
      berthd_->WaitForLine("node sessions (gRPC, mutual TLS) on port", kBound);
  ASSERT_NE(sessions, "");
  const int session_port = std::stoi(sessions.substr(sessions.rfind(' ') + 1));
  RawExchange(session_port, std::string("\x16\x03\x01\x00\x05hello", 10) + "not tls at all",
              std::chrono::seconds(10));
  std::vector<std::string> raw;
  std::string line = berthd_->WaitForLine("", kBound);
  for (; !line.empty() && line.find("berthd: grpc: ") == std::string::npos;
       line = berthd_->WaitForLine("", kBound))
    if (RawGrpcLine(line)) raw.push_back(line);
  EXPECT_NE(line, "") << "no gRPC line in berthd's voice";
  EXPECT_EQ(raw, std::vector<std::string>{});
}

}  // namespace
}  // namespace berth
