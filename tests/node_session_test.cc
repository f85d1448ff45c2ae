// Node sessions in one process (docs/agent.md, "Sessions"): berthd's gRPC
// server (daemon::NodeSessions) with its dispatcher, executor and CA on an
// in-memory store, and berth-node's client (node::NodeSession), over
// mutual TLS on loopback. What a node gets pushed, how its heartbeats and
// reports are answered, and who is refused. Runs under ThreadSanitizer
// (scripts/tsan.supp says what of gRPC is not checked).
#include "node/node_session.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include "daemon/ca/cluster_ca.h"
#include "daemon/nodes/node_dispatcher.h"
#include "daemon/nodes/node_executor.h"
#include "daemon/nodes/node_sessions.h"
#include "store/memory_store.h"
#include "store/test_dir.h"
#include "tls/certificate.h"

namespace berth {
namespace {

using api::Json;
constexpr auto kBound = std::chrono::seconds(20);
// The server's, shorter than its default (10 s) so that a test of stalled
// handshakes is quick, and long enough for a real one under ThreadSanitizer.
constexpr auto kHandshakeTimeout = std::chrono::seconds(3);
constexpr auto kIdleTimeout = std::chrono::seconds(2);  // the server's; its default is 2 min

// A node's registration with berthd: its credential and TLS material.
struct Joined {
  std::string credential;
  tls::Credentials tls;
};

// What a session's handlers got, waited on with a bound.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Json> assignments, heartbeats;
  bool ended = false;

  template <typename Pred>
  bool Wait(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, kBound, [&] { return pred(*this); });
  }
  void Options(node::NodeSessionOptions& o) {
    o.on_assignments = [this](Json batch) { Push(assignments, std::move(batch)); };
    o.on_heartbeat = [this](Json beat) { Push(heartbeats, std::move(beat)); };
    o.on_end = [this] {
      std::lock_guard lock(mu);
      ended = true;
      cv.notify_all();
    };
  }
  void Push(std::deque<Json>& to, Json item) {
    std::lock_guard lock(mu);
    to.push_back(std::move(item));
    cv.notify_all();
  }
};

class NodeSessionTest : public testing::Test {
 protected:
  void SetUp() override {
    daemon::ClusterCaOptions ca;
    ca.data_dir = dir_.path();
    ca.server_files = true;
    Result<std::unique_ptr<daemon::ClusterCa>> opened = daemon::ClusterCa::Open(store_, ca);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    ca_ = std::move(*opened);
    dispatcher_ = std::make_unique<daemon::NodeDispatcher>(
        store_, nodes_, executor_, clock_, [] {}, daemon::NodeDispatcherOptions{}, ca_.get());
    ASSERT_TRUE(dispatcher_->Load().ok());
    daemon::NodeSessionsOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.cert_file = ca_->cert_file();
    options.key_file = ca_->key_file();
    options.ca_file = ca_->bundle_file();
    options.handshake_timeout = kHandshakeTimeout;
    options.max_per_address = max_per_address_;
    options.idle_timeout = kIdleTimeout;
    sessions_ = std::make_unique<daemon::NodeSessions>(*dispatcher_, executor_,
                                                       daemon::NodeRouteHooks{}, options);
    executor_.OnPublished([this](const std::vector<std::string>& nodes, bool all) {
      sessions_->Published(nodes, all);
    });
    dispatcher_->OnRemoved([this](const std::string& node) { sessions_->Close(node); });
    ASSERT_TRUE(sessions_->Start().ok());
    executor_.Committed(1);  // berthd's first pass: nodes get their lists from now on
  }
  void TearDown() override { sessions_->Stop(); }

  Joined Join(const std::string& node) {
    Result<tls::KeyAndCsr> csr = tls::NewKeyAndCsr(node);
    EXPECT_TRUE(csr.ok());
    const api::Principal join = *dispatcher_->Authenticate(*dispatcher_->JoinToken());
    Result<Json> joined =
        dispatcher_->Register(Json{{"hostname", node},
                                   {"machine", "machine-" + node},
                                   {"resources", {{"cpu", "1000m"}, {"memory", 1 << 30}}},
                                   {"csr", csr->csr_pem}},
                              join);
    EXPECT_TRUE(joined.ok()) << joined.status().message();
    if (!joined.ok()) return {};
    return {(*joined)["credential"], {(*joined)["certificate"], csr->key_pem, (*joined)["ca"]}};
  }
  Result<std::unique_ptr<node::NodeSession>> Open(
      const Joined& as, Inbox& inbox, const std::string& credential = "",
      Duration time_heartbeats_every = node::NodeSessionOptions{}.time_heartbeats_every) {
    node::NodeSessionOptions o;
    o.time_heartbeats_every = time_heartbeats_every;
    o.target = "127.0.0.1:" + std::to_string(sessions_->port());
    o.tls = as.tls;
    o.credential = credential.empty() ? as.credential : credential;
    inbox.Options(o);
    return node::NodeSession::Open(std::move(o));
  }
  // Publishes "run `task` on `node`" as a pass's commit would.
  void Assign(const std::string& task, const std::string& node, int64_t revision) {
    tasks_.push_back(task);
    nodes_of_.push_back(node);
    (void)executor_.Start({tasks_.back(), nodes_of_.back(), no_run_, std::nullopt, &process_},
                          clock_.Now());
    executor_.Committed(revision);
  }

  int max_per_address_ = daemon::NodeSessionsOptions{}.max_per_address;
  store::TestDir dir_;
  store::MemoryStore store_;
  daemon::NodeRegistry nodes_{store_};
  ManualClock clock_{Timestamp{std::chrono::hours(24 * 365 * 56)}};
  daemon::NodeExecutor executor_{[] {}};
  std::unique_ptr<daemon::ClusterCa> ca_;
  std::unique_ptr<daemon::NodeDispatcher> dispatcher_;
  std::unique_ptr<daemon::NodeSessions> sessions_;
  const executor::ProcessSpec process_ = [] {
    executor::ProcessSpec p;
    p.command = "sleep";
    return p;
  }();
  const std::optional<executor::SimulatedRun> no_run_;
  std::deque<std::string> tasks_, nodes_of_;
};

// The node says hello and gets its full list; a later commit is pushed to
// it with only what changed, without a request; heartbeats and reports are
// answered on the stream, and a report on another node's task is refused.
TEST_F(NodeSessionTest, AssignmentsArePushedAndHeartbeatsAndReportsAnswered) {
  const Joined n1 = Join("n1"), n2 = Join("n2");
  Inbox inbox;
  Result<std::unique_ptr<node::NodeSession>> session = Open(n1, inbox);
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE(inbox.Wait([](Inbox& i) { return !i.assignments.empty(); }));
  EXPECT_EQ(inbox.assignments[0]["full"], true);
  EXPECT_TRUE(inbox.assignments[0]["tasks"].empty());
  EXPECT_EQ(sessions_->open(), 1u);

  Assign("web.1.5", "n1", 5);
  Assign("db.1.6", "n2", 6);  // n2's: not pushed to n1
  ASSERT_TRUE(inbox.Wait([](Inbox& i) { return i.assignments.size() >= 2; }));
  const Json pushed = inbox.assignments[1];
  EXPECT_EQ(pushed["full"], false);
  ASSERT_EQ(pushed["tasks"].size(), 1u) << pushed.dump();
  EXPECT_EQ(pushed["tasks"][0]["task"], "web.1.5");
  EXPECT_EQ(pushed["tasks"][0]["process"]["command"], "sleep");
  EXPECT_GE(pushed["revision"].get<int64_t>(), 5);  // the latest published when it was sent

  ASSERT_TRUE((*session)->Heartbeat().ok());
  ASSERT_TRUE(inbox.Wait([](Inbox& i) { return !i.heartbeats.empty(); }));
  EXPECT_EQ(inbox.heartbeats[0]["ca_digest"], ca_->digest());

  Result<Json> accepted =
      (*session)->Report(Json{{"tasks", {{{"task", "web.1.5"}, {"state", "running"}}}}}, kBound);
  ASSERT_TRUE(accepted.ok()) << accepted.status().message();
  EXPECT_EQ((*accepted)["accepted"], 1);
  Result<Json> refused =
      (*session)->Report(Json{{"tasks", {{{"task", "db.1.6"}, {"state", "running"}}}}}, kBound);
  EXPECT_EQ(refused.status().message(), "task 'db.1.6' is not assigned to node 'n1'");
  Result<Json> malformed = (*session)->Report(Json{{"tasks", 3}}, kBound);
  EXPECT_EQ(malformed.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(malformed.status().message().find("tasks"), std::string::npos);
  EXPECT_FALSE((*session)->ended());  // a bad report refuses the report, not the session
}

// A timed heartbeat is answered, and the node sends its round trip with the
// next heartbeat, which berthd counts; an answer that did not change is not
// handed to the node's handler. A report's answer marks that berthd took
// what the node sent before it (one stream, in order). The node times one
// heartbeat per interval: every one at 0, only the first in an hour.
TEST_F(NodeSessionTest, TimedHeartbeatsAreAnsweredAndTheirRoundTripsCounted) {
  const Joined n1 = Join("n1");
  const Histogram& round_trips = sessions_->heartbeat_round_trips();
  uint64_t counted = 0;
  for (const Duration every : {Duration{0}, Duration{std::chrono::hours(1)}}) {
    Inbox inbox;
    Result<std::unique_ptr<node::NodeSession>> session = Open(n1, inbox, "", every);
    ASSERT_TRUE(session.ok()) << session.status().message();
    auto beat_then_report = [&] {
      ASSERT_TRUE((*session)->Heartbeat().ok());
      Result<Json> taken = (*session)->Report(Json{{"tasks", Json::array()}}, kBound);
      ASSERT_TRUE(taken.ok()) << taken.status().message();
    };
    beat_then_report();  // timed; nothing to send yet
    ASSERT_TRUE(inbox.Wait([](Inbox& i) { return i.heartbeats.size() == 1; }));
    EXPECT_EQ(round_trips.Cumulative().back(), counted);
    beat_then_report();  // sends the first's round trip
    EXPECT_EQ(round_trips.Cumulative().back(), ++counted);
    beat_then_report();
    if (every == Duration{0}) ++counted;  // the second's; in the hour, none was timed
    EXPECT_EQ(round_trips.Cumulative().back(), counted);
    std::lock_guard lock(inbox.mu);
    EXPECT_EQ(inbox.heartbeats.size(), 1u);  // the same answer each time
  }
  EXPECT_GT(round_trips.sum_seconds(), 0.0);
  EXPECT_LT(round_trips.sum_seconds(), static_cast<double>(kBound.count()));
}

// A node removed while its session is open has it closed at once, with the
// words berth-node stops on; it cannot open another.
TEST_F(NodeSessionTest, ARemovedNodesSessionIsClosedAtOnce) {
  const Joined n1 = Join("n1");
  Inbox inbox;
  Result<std::unique_ptr<node::NodeSession>> session = Open(n1, inbox);
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE(inbox.Wait([](Inbox& i) { return !i.assignments.empty(); }));
  ASSERT_TRUE(dispatcher_->Remove("n1", true).ok());
  ASSERT_TRUE(inbox.Wait([](Inbox& i) { return i.ended; }));
  const Status ended = (*session)->Close();
  EXPECT_EQ(ended.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(ended.message().starts_with("node_removed: ")) << ended.message();

  Inbox again;
  Result<std::unique_ptr<node::NodeSession>> reopened = Open(n1, again);
  ASSERT_TRUE(reopened.ok());
  ASSERT_TRUE(again.Wait([](Inbox& i) { return i.ended; }));
  EXPECT_TRUE((*reopened)->Close().message().starts_with("node_removed: "));
  EXPECT_EQ(sessions_->open(), 0u);
}

// A credential berthd does not know, another node's credential beside this
// node's certificate, and a client without a certificate are refused;
// nothing is written.
TEST_F(NodeSessionTest, WrongCredentialsAndCertificatesAreRefused) {
  const Joined n1 = Join("n1"), n2 = Join("n2");
  const int64_t revision = store_.revision();
  Inbox unknown;
  Result<std::unique_ptr<node::NodeSession>> s1 = Open(n1, unknown, "not-a-credential");
  ASSERT_TRUE(s1.ok());
  ASSERT_TRUE(unknown.Wait([](Inbox& i) { return i.ended; }));
  EXPECT_TRUE((*s1)->Close().message().starts_with("unauthorized: "));

  Inbox crossed;
  Result<std::unique_ptr<node::NodeSession>> s2 = Open(n1, crossed, n2.credential);
  ASSERT_TRUE(s2.ok());
  ASSERT_TRUE(crossed.Wait([](Inbox& i) { return i.ended; }));
  EXPECT_EQ((*s2)->Close().code(), StatusCode::kPermissionDenied);

  Inbox anonymous;
  Joined no_cert = n1;
  no_cert.tls.cert_pem = no_cert.tls.key_pem = "";
  EXPECT_EQ(Open(no_cert, anonymous).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store_.revision(), revision);
  EXPECT_EQ(sessions_->open(), 0u);
}

// A node's newer session replaces its older one, which ends.
TEST_F(NodeSessionTest, ANewerSessionOfANodeReplacesTheOlder) {
  const Joined n1 = Join("n1");
  Inbox first, second;
  Result<std::unique_ptr<node::NodeSession>> older = Open(n1, first);
  ASSERT_TRUE(older.ok());
  ASSERT_TRUE(first.Wait([](Inbox& i) { return !i.assignments.empty(); }));
  Result<std::unique_ptr<node::NodeSession>> newer = Open(n1, second);
  ASSERT_TRUE(newer.ok());
  ASSERT_TRUE(first.Wait([](Inbox& i) { return i.ended; }));
  EXPECT_NE((*older)->Close().message().find("replaced by a newer session"), std::string::npos);
  Assign("web.1.5", "n1", 5);
  ASSERT_TRUE(second.Wait(
      [](Inbox& i) { return !i.assignments.empty() && !i.assignments.back()["tasks"].empty(); }));
  EXPECT_EQ(sessions_->open(), 1u);
}

// A flood of sessions from one address stops at the limit: one more is
// refused with the reason and changes nothing; a node's newer session from
// its same address still replaces its older one, and a session that ends
// frees its place.
class NodeSessionLimitTest : public NodeSessionTest {
 protected:
  NodeSessionLimitTest() { max_per_address_ = 2; }
};

TEST_F(NodeSessionLimitTest, SessionsFromOneAddressStopAtTheLimit) {
  const Joined n1 = Join("n1"), n2 = Join("n2"), n3 = Join("n3");
  auto opened = [](Inbox& i) { return !i.assignments.empty(); };
  Inbox i1, i2, i3;
  Result<std::unique_ptr<node::NodeSession>> s1 = Open(n1, i1), s2 = Open(n2, i2);
  ASSERT_TRUE(s1.ok() && s2.ok());
  ASSERT_TRUE(i1.Wait(opened) && i2.Wait(opened));
  const int64_t revision = store_.revision();

  Result<std::unique_ptr<node::NodeSession>> s3 = Open(n3, i3);
  ASSERT_TRUE(s3.ok());
  ASSERT_TRUE(i3.Wait([](Inbox& i) { return i.ended; }));
  const Status refused = (*s3)->Close();
  EXPECT_NE(refused.message().find("too many node sessions from 127.0.0.1: 2 are open"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(store_.revision(), revision);
  EXPECT_EQ(sessions_->open(), 2u);

  Inbox i1_again;
  Result<std::unique_ptr<node::NodeSession>> s1_again = Open(n1, i1_again);
  ASSERT_TRUE(s1_again.ok());
  ASSERT_TRUE(i1_again.Wait(opened));
  ASSERT_TRUE(i1.Wait([](Inbox& i) { return i.ended; }));
  EXPECT_EQ(sessions_->open(), 2u);

  (void)(*s2)->Close();
  const auto bound = std::chrono::steady_clock::now() + kBound;
  while (sessions_->open() > 1 && std::chrono::steady_clock::now() < bound)
    std::this_thread::yield();  // the server's end of the stream follows the node's
  Inbox i3_again;
  Result<std::unique_ptr<node::NodeSession>> s3_again = Open(n3, i3_again);
  ASSERT_TRUE(s3_again.ok());
  EXPECT_TRUE(i3_again.Wait(opened));
  EXPECT_EQ(sessions_->open(), 2u);
}

// A flood of connections from one address that never finish their TLS
// handshake: a node's session opens meanwhile, and berthd closes every one
// of them after its handshake timeout (gRPC's own would hold them 120 s).
TEST_F(NodeSessionTest, ConnectionsThatNeverFinishTheirHandshakeAreClosed) {
  std::vector<int> stalled;
  for (int i = 0; i < 64; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(sessions_->port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(write(fd, "\x16\x03\x01", 3), 3);  // the start of a ClientHello, and no more
    stalled.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  const Joined n1 = Join("n1");
  Inbox inbox;
  Result<std::unique_ptr<node::NodeSession>> session = Open(n1, inbox);
  ASSERT_TRUE(session.ok()) << session.status().message();
  ASSERT_TRUE(inbox.Wait([](Inbox& i) { return !i.assignments.empty(); }));
  for (int fd : stalled) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        start + kBound - std::chrono::steady_clock::now());
    ASSERT_EQ(poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))), 1)
        << "a stalled connection still open after " << kBound.count() << " s";
    char byte;
    EXPECT_LE(read(fd, &byte, 1), 0);  // closed, with nothing sent
    close(fd);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, kHandshakeTimeout - std::chrono::seconds(1));
  EXPECT_FALSE((*session)->ended());
}

// A connection that completes its handshake with a node's certificate but
// opens no session is closed after the idle timeout, so connections held
// open on purpose do not pile up.
TEST_F(NodeSessionTest, AConnectionWithNoSessionIsClosedWhenIdle) {
  const Joined n1 = Join("n1");
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = n1.tls.trust_pem;
  tls.pem_private_key = n1.tls.key_pem;
  tls.pem_cert_chain = n1.tls.cert_pem;
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(sessions_->port()),
                                     grpc::SslCredentials(tls));
  const auto start = std::chrono::system_clock::now();
  ASSERT_TRUE(channel->WaitForConnected(start + kBound));
  grpc_connectivity_state state = channel->GetState(false);
  while (state == GRPC_CHANNEL_READY && channel->WaitForStateChange(state, start + kBound))
    state = channel->GetState(false);
  EXPECT_NE(state, GRPC_CHANNEL_READY) << "still connected after " << kBound.count() << " s";
  EXPECT_GE(std::chrono::system_clock::now() - start, kIdleTimeout - std::chrono::seconds(1));
}

}  // namespace
}  // namespace berth
