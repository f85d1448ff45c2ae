// Issue 13's defects, each reproduced through berthd's real HTTP API: no
// request, id or document may crash, wedge or confuse berthd, and a refused
// request changes nothing. tests/hostile_input_test.cc sends thousands of
// generated bodies to the same routes of the programs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "api/api_client.h"
#include "daemon/daemon_test_support.h"

namespace berth::daemon {
namespace {

// Sends `request` as it is on a new TLS connection and returns the status of
// the answer (-1 when none came). For requests httplib's client will not
// send. The server's certificate is not checked: what is tested is how
// berthd answers.
int RawStatus(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      SSL_set_fd(ssl, fd) == 1 && SSL_connect(ssl) == 1 &&
      SSL_write(ssl, request.data(), static_cast<int>(request.size())) ==
          static_cast<int>(request.size())) {
    char chunk[512];
    int n = 0;
    while (answer.find("\r\n") == std::string::npos && (n = SSL_read(ssl, chunk, sizeof chunk)) > 0)
      answer.append(chunk, static_cast<size_t>(n));
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
  int status = -1;
  if (std::sscanf(answer.c_str(), "HTTP/1.1 %d", &status) != 1) return -1;
  return status;
}

std::string Quote(const std::string& text) { return Json(text).dump(); }

// Defect 1: a 600 KB body nesting labels 100,000 objects deep crashed berthd.
TEST_F(DaemonTest, DeeplyNestedBodiesAre400NotACrash) {
  Reopen(1 << 20);
  std::string body = R"({"id": "n2", "labels": )";
  for (int i = 0; i < 100'000; ++i) body += R"({"a":)";
  body += "1" + std::string(100'001, '}');
  ASSERT_LT(body.size(), size_t{1} << 20);
  auto [status, error] = Call("POST", "/v1/nodes", body);
  EXPECT_EQ(status, 400);
  EXPECT_EQ(error["error"]["message"], "invalid JSON: nested deeper than 32 levels");
  EXPECT_EQ(Call("GET", "/v1/health").first, 200);
  EXPECT_EQ(Revision(), opened_revision_);
}

// Defect 2: a second server on a port in use started and shared its traffic.
TEST_F(DaemonTest, APortInUseIsRefusedNotShared) {
  DaemonOptions options = Options("other");
  options.port = daemon_->port();
  Result<std::unique_ptr<Daemon>> second = Daemon::Open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(
      second.status().message(),
      "cannot listen on 127.0.0.1:" + std::to_string(daemon_->port()) + ": address already in use");
}

// Defect 3: ids were not validated; "a/b" could never be fetched or removed,
// and a 100 KB node id was copied into every task.
TEST_F(DaemonTest, IdsFollowOneRuleAndARefusalNamesTheField) {
  Reopen(1 << 20);
  const std::vector<std::string> bad = {
      "../../etc/passwd",      "a/b",  "a b", " a",  "a ",
      std::string("a\0b", 3),  "a\nb", "-a",  "a.b", std::string(64, 'a'),
      std::string(10'000, 'n')};
  for (const std::string& id : bad) {
    for (const char* path : {"/v1/nodes", "/v1/services"}) {
      auto [status, error] = Call("POST", path, R"({"id": )" + Quote(id) + "}");
      EXPECT_EQ(status, 400) << path << " " << Quote(id);
      EXPECT_EQ(error["error"]["message"].get<std::string>().rfind("id: '", 0), 0u) << error.dump();
    }
    auto [status, error] = Call("POST", "/v1/jobs",
                                R"({"id": )" + Quote(id) + R"(, "requestor": "r", "tasks": [{}]})");
    EXPECT_EQ(status, 400) << Quote(id);
  }
  auto [huge, h] = Call("POST", "/v1/nodes", R"({"id": ")" + std::string(100'000, 'n') + "\"}");
  EXPECT_EQ(huge, 400);
  EXPECT_EQ(h["error"]["message"].get<std::string>().rfind(
                "invalid JSON: a string longer than 65536 bytes: 'nnn", 0),
            0u);
  const std::string longest(63, 'a');
  EXPECT_EQ(Call("POST", "/v1/nodes", R"({"id": ")" + longest + R"("})").first, 201);
  EXPECT_EQ(Call("GET", "/v1/nodes/" + longest).first, 200);
  const int64_t revision = Revision();
  auto [key, k] = Call("POST", "/v1/nodes", R"({"id": "n2", "labels": {"a b": "x"}})");
  EXPECT_EQ(key, 400);
  EXPECT_EQ(k["error"]["message"],
            "labels: 'a b' is not a valid label key (use letters, digits, '.', '-' and '_')");
  auto [value, v] = Call("POST", "/v1/nodes",
                         R"({"id": "n2", "labels": {"k": ")" + std::string(4097, 'v') + R"("}})");
  EXPECT_EQ(value, 400);
  EXPECT_NE(v["error"]["message"].get<std::string>().find("is longer than 4096 bytes"),
            std::string::npos);
  auto [kind, g] =
      Call("POST", "/v1/nodes", R"({"id": "n2", "resources": {"generic": {"a/b": 1}}})");
  EXPECT_EQ(kind, 400);
  EXPECT_EQ(g["error"]["message"].get<std::string>().rfind("resources.generic: generic resource "
                                                           "kind: 'a/b'",
                                                           0),
            0u)
      << g.dump();
  auto [cls, c] = Call("PATCH", "/v1/classes", R"({"classes": {"a/b": 100}})");
  EXPECT_EQ(cls, 400);
  EXPECT_EQ(c["error"]["message"].get<std::string>().rfind("classes: class name: 'a/b'", 0), 0u)
      << c.dump();
  EXPECT_EQ(Revision(), revision) << "a refused request changes nothing";
}

// A store written before the naming rule may hold ids it refuses: berthd
// still starts, and the API looks ids up as they are, so they can be removed.
TEST_F(DaemonTest, ObjectsStoredBeforeTheNamingRuleCanStillBeRemoved) {
  Close();
  {
    Result<std::unique_ptr<store::SqliteStore>> store =
        store::SqliteStore::Open(dir_.path() + "/data/berth.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)
                    ->Commit({store::Write::Create("node", "web1.example.com",
                                                   R"({"id": "web1.example.com"})")})
                    .ok());
  }
  Open();
  EXPECT_EQ(Call("GET", "/v1/nodes/web1.example.com").first, 200);
  EXPECT_EQ(Call("DELETE", "/v1/nodes/web1.example.com?force=true").first, 200);
  EXPECT_TRUE(Call("GET", "/v1/nodes").second["nodes"].empty());
}

// Defect 4: invalid UTF-8 got "500 internal error" and nothing was logged.
TEST_F(DaemonTest, InvalidUtf8Is400SayingWhere) {
  auto [status, error] = Call("POST", "/v1/nodes", "{\"id\": \"n\xe9\"}");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(error["error"]["message"], "invalid JSON: invalid UTF-8 at line 1, column 10 (byte 9)");
  auto [lookup, l] = Call("GET", "/v1/nodes/n%FF");
  EXPECT_EQ(lookup, 404);
  EXPECT_EQ(l["error"]["message"], "no node 'n\\xff'");
  EXPECT_EQ(Metric("berth_http_server_errors_total"), "0");
}

// Defect 5: a drain without a body got 400 bad_request, a form body over
// 8 KiB got a 413 that misstated the limit, and "bearer" was refused.
TEST_F(DaemonTest, DrainNeedsNoBodyFormsAre415AndTheBearerSchemeIsCaseInsensitive) {
  Reopen(1 << 20);
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "n1"})").first, 201);
  const std::string auth = "Authorization: Bearer " + daemon_->token() + "\r\n";
  EXPECT_EQ(RawStatus(daemon_->port(), "POST /v1/nodes/n1/drain HTTP/1.1\r\nHost: x\r\n" + auth +
                                           "Connection: close\r\n\r\n"),
            200);
  EXPECT_EQ(Call("GET", "/v1/nodes/n1").second["availability"], "drain");
  const std::string form = R"({"id": "n2", "hostname": ")" + std::string(9000, 'h') + "\"}";
  httplib::Result posted = client_->Post("/v1/nodes", form, "application/x-www-form-urlencoded");
  ASSERT_TRUE(posted);
  EXPECT_EQ(posted->status, 415);
  EXPECT_EQ(Json::parse(posted->body)["error"]["code"], "unsupported_media_type");
  std::unique_ptr<httplib::Client> client = NewClient();
  httplib::Client& lower = *client;
  for (const std::string scheme : {"bearer ", "BEARER  "}) {
    httplib::Result r = lower.Get("/v1/nodes", {{"Authorization", scheme + daemon_->token()}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << scheme;
  }
  httplib::Result basic = lower.Get("/v1/nodes", {{"Authorization", "Basic " + daemon_->token()}});
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->status, 401);
}

// Defect 6: a deleted token file was silently replaced with a new token.
TEST_F(DaemonTest, AMissingTokenFileWithDataIsRefusedUnlessANewTokenIsAsked) {
  ASSERT_EQ(Call("POST", "/v1/nodes", R"({"id": "n1"})").first, 201);
  const std::string old_token = daemon_->token();
  Close();
  ASSERT_EQ(::unlink((dir_.path() + "/data/token").c_str()), 0);
  DaemonOptions options = Options();
  Result<std::unique_ptr<Daemon>> refused = Daemon::Open(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--new-token"), std::string::npos);
  options.new_token = true;
  Result<std::unique_ptr<Daemon>> renewed = Daemon::Open(options);
  ASSERT_TRUE(renewed.ok()) << renewed.status().message();
  EXPECT_NE((*renewed)->token(), old_token);
}

// Defect 7: a read-only data directory said "configuring: disk I/O error",
// and an unreachable berthd "cannot reach berthd at ...: Connection".
TEST(DaemonStart, AnUnwritableDataDirectoryAndAnUnreachableServerAreExplained) {
  DaemonOptions options;
  options.data_dir = "/proc";  // no process may create files there, not even root
  options.port = 0;
  Result<std::unique_ptr<Daemon>> daemon = Daemon::Open(options);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().message().rfind("cannot write in data directory /proc: ", 0), 0u)
      << daemon.status().message();
  api::ApiClient client("127.0.0.1:1", std::string(64, 't'));
  Result<api::Json> answer = client.Call("GET", "/v1/nodes");
  ASSERT_FALSE(answer.ok());
  EXPECT_EQ(answer.status().message(),
            "cannot reach berthd at http://127.0.0.1:1: connection refused or host unreachable "
            "(is it running, on that address and port?)");
}

}  // namespace
}  // namespace berth::daemon
