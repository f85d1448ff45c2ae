#include "daemon/nodes/node_dispatcher.h"

#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "store/memory_store.h"
#include "tls/seal.h"

namespace berth::daemon {
namespace {

using api::Json;
using api::Principal;

Json Registration(const std::string& hostname, const std::string& machine) {
  return Json{{"hostname", hostname},
              {"machine", machine},
              {"resources", {{"cpu", "2000m"}, {"memory", 1 << 30}}},
              {"platform", {{"os", "linux"}, {"arch", "amd64"}}},
              {"address", "127.0.0.1"},
              {"endpoint", "127.0.0.1:7481"},
              {"limits", {{"enforced", false}, {"reason", "cgroup v1"}}}};
}

class NodeDispatcherTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dispatcher_->Load().ok()); }

  // The node's stored state once the monitor wrote `state`, waiting (with
  // a bound) for its notification.
  std::string WaitForState(const std::string& node, const std::string& state) {
    std::unique_lock lock(mu_);
    notified_cv_.wait_for(lock, std::chrono::seconds(10),
                          [&] { return nodes_.Get(node)->value("state", "") == state; });
    return nodes_.Get(node)->value("state", "");
  }
  Principal Join() { return *dispatcher_->Authenticate(*dispatcher_->JoinToken()); }
  std::unique_ptr<NodeDispatcher> NewDispatcher() {
    return std::make_unique<NodeDispatcher>(store_, nodes_, executor_, clock_, [this] {
      std::lock_guard lock(mu_);
      notified_cv_.notify_all();
    });
  }

  store::MemoryStore store_;
  NodeRegistry nodes_{store_};
  ManualClock clock_{Timestamp{Duration{1'000'000}}};
  NodeExecutor executor_{[] {}};
  std::mutex mu_;
  std::condition_variable notified_cv_;
  std::unique_ptr<NodeDispatcher> dispatcher_ = NewDispatcher();
};

TEST_F(NodeDispatcherTest, AMachineJoinsWithTheTokenAndGetsACredentialOfItsOwn) {
  EXPECT_EQ(Join().kind, Principal::Kind::kNodeJoin);
  Result<Json> joined = dispatcher_->Register(Registration("n1", "m1"), Join());
  ASSERT_TRUE(joined.ok()) << joined.status().message();
  EXPECT_EQ((*joined)["node"], "n1");
  EXPECT_EQ((*joined)["heartbeat_period"], "5s");
  const std::optional<Principal> node =
      dispatcher_->Authenticate((*joined)["credential"].get<std::string>());
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->kind, Principal::Kind::kNode);
  EXPECT_EQ(node->node, "n1");
  const Json stored = *nodes_.Get("n1");
  EXPECT_EQ(stored["state"], "ready");
  EXPECT_EQ(stored["resources"]["cpu"], "2000m");
  EXPECT_EQ(stored["berth_node"]["limits_enforced"], false);
  EXPECT_EQ(stored["berth_node"]["limits"], "cgroup v1");
  EXPECT_EQ(stored["berth_node"]["limits_cgroup"], "");
  EXPECT_TRUE(executor_.IsBerthNode("n1"));
  EXPECT_FALSE(dispatcher_->Authenticate("not-a-token").has_value());
  // Only the credential's hash is stored (docs/security.md, "Secrets at rest").
  const std::string record = (*store_.Get("node_credential", "n1"))->body;
  EXPECT_EQ(record.find((*joined)["credential"].get<std::string>()), std::string::npos) << record;
  EXPECT_NE(record.find(tls::HashSecret((*joined)["credential"].get<std::string>())),
            std::string::npos);
}

// A restarted berth-node registers again: the same node, the same credential.
TEST_F(NodeDispatcherTest, TheSameMachineRegisteringAgainIsTheSameNode) {
  const Json first = *dispatcher_->Register(Registration("n1", "m1"), Join());
  ASSERT_TRUE(
      nodes_.Update("n1", Json{{"labels", {{"zone", "a"}}}, {"availability", "pause"}}).ok());
  const Principal node = *dispatcher_->Authenticate(first["credential"].get<std::string>());
  Result<Json> again = dispatcher_->Register(Registration("n1", "m1"), node);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again->contains("credential"));  // it keeps its own: berthd has only the hash
  EXPECT_EQ(dispatcher_->Authenticate(first["credential"].get<std::string>())->node, "n1");
  EXPECT_EQ(nodes_.List()->at("nodes").size(), 1u);
  EXPECT_EQ((*nodes_.Get("n1"))["labels"]["zone"], "a");  // the admin's settings stay
  EXPECT_EQ((*nodes_.Get("n1"))["availability"], "pause");
}

// Whether a node holds pids limits is its own fact beside the others: a
// node without the pids controller enforces cpu and memory only, and says
// why not pids; a node that enforces nothing holds no pids limit either.
TEST_F(NodeDispatcherTest, ANodeSaysWhetherItHoldsPidsLimits) {
  Json body = Registration("n1", "m1");
  body["limits"] = {{"enforced", true},
                    {"cgroup", "v1"},
                    {"pids", false},
                    {"pids_reason", "cgroup v1's pids controller is not mounted"}};
  ASSERT_TRUE(dispatcher_->Register(body, Join()).ok());
  Json stored = (*nodes_.Get("n1"))["berth_node"];
  EXPECT_EQ(stored["limits_enforced"], true);
  EXPECT_EQ(stored["limits_pids"], false);
  EXPECT_EQ(stored["limits_pids_reason"], "cgroup v1's pids controller is not mounted");
  body = Registration("n2", "m2");
  body["limits"] = {{"enforced", false}, {"pids", true}};
  ASSERT_TRUE(dispatcher_->Register(body, Join()).ok());
  EXPECT_EQ((*nodes_.Get("n2"))["berth_node"]["limits_pids"], false);
  const int64_t revision = store_.revision();
  body = Registration("n3", "m3");
  body["limits"] = {{"enforced", true}, {"pids", "yes"}};
  EXPECT_EQ(dispatcher_->Register(body, Join()).status().message(),
            "limits.pids: expected true or false, got string");
  body["limits"] = {{"enforced", true}, {"pids_reason", 3}};
  EXPECT_EQ(dispatcher_->Register(body, Join()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.revision(), revision);
}

// A store whose next commit is preceded by `before` (once): another
// writer landing between a read and the commit that depends on it.
class RacedStore final : public store::Store {
 public:
  std::function<void()> before;
  store::MemoryStore inner;

  Result<int64_t> Commit(const std::vector<store::Write>& writes) override {
    if (auto hook = std::exchange(before, nullptr)) hook();
    return inner.Commit(writes);
  }
  Result<std::optional<store::StoredObject>> Get(std::string_view kind,
                                                 std::string_view id) const override {
    return inner.Get(kind, id);
  }
  Result<std::vector<store::StoredObject>> List(std::string_view kind) const override {
    return inner.List(kind);
  }
  int64_t revision() const override { return inner.revision(); }
};

// A berth-node restarting as the monitor marks it down (its node changed
// between the registration's read and its commit) still joins: the
// registration reads the node again rather than hand the node a conflict.
TEST(NodeDispatcherRace, ANodeMarkedDownWhileItRegistersAgainStillJoins) {
  RacedStore store;
  NodeRegistry nodes(store);
  ManualClock clock{Timestamp{Duration{1'000'000}}};
  NodeExecutor executor{[] {}};
  NodeDispatcher dispatcher(store, nodes, executor, clock, [] {});
  ASSERT_TRUE(dispatcher.Load().ok());
  const Principal join = *dispatcher.Authenticate(*dispatcher.JoinToken());
  const Json first = *dispatcher.Register(Registration("n1", "m1"), join);
  const Principal node = *dispatcher.Authenticate(first["credential"].get<std::string>());
  store.before = [&] { ASSERT_TRUE(nodes.Update("n1", Json{{"state", "down"}}).ok()); };
  Result<Json> again = dispatcher.Register(Registration("n1", "m1"), node);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(store.before, nullptr);  // the race happened
  EXPECT_EQ((*nodes.Get("n1"))["state"], "ready");
}

TEST_F(NodeDispatcherTest, AHeldNameIsRefusedAndChangesNothing) {
  ASSERT_TRUE(dispatcher_->Register(Registration("n1", "m1"), Join()).ok());
  ASSERT_TRUE(nodes_.Register(Json{{"id", "sim"}}).ok());
  const int64_t revision = store_.revision();
  Result<Json> other = dispatcher_->Register(Registration("n1", "m2"), Join());
  EXPECT_EQ(other.status().code(), StatusCode::kConflict);
  EXPECT_EQ(other.status().message(),
            "node 'n1' is held by another machine; start berth-node with another --hostname");
  // The join token does not get a joined node's credential, even with its machine id.
  EXPECT_EQ(dispatcher_->Register(Registration("n1", "m1"), Join()).status().code(),
            StatusCode::kConflict);
  EXPECT_EQ(dispatcher_->Register(Registration("sim", "m2"), Join()).status().code(),
            StatusCode::kConflict);
  const Principal n1 = {Principal::Kind::kNode, "n1"};
  EXPECT_EQ(dispatcher_->Register(Registration("n2", "m1"), n1).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(dispatcher_->Register(Json{{"hostname", "n3"}}, Join()).status().message(),
            "missing field 'machine'");
  EXPECT_EQ(store_.revision(), revision);  // a refusal writes nothing
}

TEST_F(NodeDispatcherTest, SilenceMarksANodeDownAfterTheGraceAndAHeartbeatBringsItBack) {
  ASSERT_TRUE(dispatcher_->Register(Registration("n1", "m1"), Join()).ok());
  dispatcher_->Start();
  clock_.Advance(dispatcher_->grace() - Duration{1});
  ASSERT_TRUE(dispatcher_->Heartbeat("n1").ok());  // in time: the grace starts again
  clock_.Advance(dispatcher_->grace() - Duration{1});
  EXPECT_EQ(nodes_.Get("n1")->value("state", ""), "ready");
  // Down once the grace is over, within the monitor's tick.
  clock_.Advance(Duration{1} + dispatcher_->monitor_tick());
  EXPECT_EQ(WaitForState("n1", "down"), "down");
  ASSERT_TRUE(dispatcher_->Heartbeat("n1").ok());
  EXPECT_EQ(nodes_.Get("n1")->value("state", ""), "ready");
  dispatcher_->Stop();
}

// berthd restarted: every node gets a whole grace period from the start.
TEST_F(NodeDispatcherTest, ARestartedBerthdGivesEveryNodeAFreshGrace) {
  const Json joined = *dispatcher_->Register(Registration("n1", "m1"), Join());
  const std::string token = *dispatcher_->JoinToken();
  dispatcher_.reset();
  clock_.Advance(std::chrono::hours(1));  // berthd was down for an hour
  dispatcher_ = NewDispatcher();
  ASSERT_TRUE(dispatcher_->Load().ok());
  EXPECT_EQ(*dispatcher_->JoinToken(), token);
  EXPECT_TRUE(dispatcher_->Authenticate(joined["credential"].get<std::string>()).has_value());
  dispatcher_->Start();
  clock_.Advance(dispatcher_->grace() - Duration{1});
  ASSERT_TRUE(dispatcher_->Heartbeat("n1").ok());
  EXPECT_EQ(nodes_.Get("n1")->value("state", ""), "ready");
  dispatcher_->Stop();
}

TEST_F(NodeDispatcherTest, ARotatedJoinTokenReplacesTheOldButNotTheNodesCredentials) {
  const std::string old = *dispatcher_->JoinToken();
  const Json joined = *dispatcher_->Register(Registration("n1", "m1"), Join());
  Result<std::string> rotated = dispatcher_->RotateJoinToken();
  ASSERT_TRUE(rotated.ok());
  EXPECT_NE(*rotated, old);
  EXPECT_FALSE(dispatcher_->Authenticate(old).has_value());
  EXPECT_EQ(dispatcher_->Authenticate(*rotated)->kind, Principal::Kind::kNodeJoin);
  EXPECT_TRUE(dispatcher_->Authenticate(joined["credential"].get<std::string>()).has_value());
}

TEST_F(NodeDispatcherTest, ARemovedNodeLosesItsCredentialInTheSameCommit) {
  const Json joined = *dispatcher_->Register(Registration("n1", "m1"), Join());
  const int64_t revision = store_.revision();
  ASSERT_TRUE(dispatcher_->Remove("n1", /*force=*/true).ok());
  EXPECT_EQ(store_.revision(), revision + 1);
  EXPECT_FALSE(store_.Get("node_credential", "n1")->has_value());
  EXPECT_EQ(dispatcher_->Heartbeat("n1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(dispatcher_->Authenticate(joined["credential"].get<std::string>())->kind,
            Principal::Kind::kRemovedNode);
  EXPECT_FALSE(executor_.IsBerthNode("n1"));
  EXPECT_FALSE(dispatcher_->CredentialHashOf("n1").has_value());
}

// Defect 6: `node rm` of a ready node needed no force. As Docker's, a node
// that is not down is removed only with force; down, unknown or
// disconnected ones without.
TEST_F(NodeDispatcherTest, AReadyNodeIsRemovedOnlyWithForce) {
  const Json joined = *dispatcher_->Register(Registration("n1", "m1"), Join());
  ASSERT_TRUE(nodes_.Register(Json{{"id", "sim"}}).ok());  // no state: ready
  const int64_t revision = store_.revision();
  for (const char* node : {"n1", "sim"}) {
    const Status refused = dispatcher_->Remove(node, false);
    EXPECT_EQ(refused.code(), StatusCode::kConflict) << node;
    EXPECT_EQ(refused.message(),
              "node '" + std::string(node) +
                  "' is not down and can't be removed (its state is ready): stop it first, or "
                  "remove it anyway with --force (berth node rm --force " +
                  node + ", or DELETE /v1/nodes/" + node + "?force=true)");
  }
  // A refusal changes nothing: the node, its credential and its machine stay.
  EXPECT_EQ(store_.revision(), revision);
  EXPECT_EQ(dispatcher_->Authenticate(joined["credential"].get<std::string>())->kind,
            Principal::Kind::kNode);
  EXPECT_TRUE(dispatcher_->Heartbeat("n1").ok());
  for (const char* state : {"down", "unknown", "disconnected"}) {
    ASSERT_TRUE(nodes_.Register(Json{{"id", state}, {"state", state}}).ok());
    EXPECT_TRUE(dispatcher_->Remove(state, false).ok()) << state;
  }
  ASSERT_TRUE(nodes_.Update("n1", Json{{"state", "down"}}).ok());
  EXPECT_TRUE(dispatcher_->Remove("n1", false).ok());
  EXPECT_TRUE(dispatcher_->Remove("sim", true).ok());
  EXPECT_EQ(dispatcher_->Remove("sim", true).code(), StatusCode::kNotFound);
}

// Defect 6: a removed berth-node joined again at once, with the join token.
// Its identity is denied instead, also after berthd restarts: its
// credential (every route) and its machine (registration, any token).
TEST_F(NodeDispatcherTest, ARemovedNodesCredentialAndMachineAreDeniedAlsoAfterARestart) {
  const Json joined = *dispatcher_->Register(Registration("n1", "m1"), Join());
  const std::string credential = joined["credential"];
  ASSERT_TRUE(dispatcher_->Remove("n1", true).ok());
  const std::string why =
      "node 'n1' was removed from the cluster (berth node rm): berthd refuses its credential "
      "and its machine. To join this machine again, as a new node, delete node.json from its "
      "berth-node data directory and start berth-node with the node join token (--token-file)";
  for (int restarted = 0; restarted < 2; ++restarted) {
    if (restarted) {
      dispatcher_ = NewDispatcher();
      ASSERT_TRUE(dispatcher_->Load().ok());
    }
    const std::optional<Principal> old = dispatcher_->Authenticate(credential);
    ASSERT_TRUE(old.has_value());
    EXPECT_EQ(old->kind, Principal::Kind::kRemovedNode);
    EXPECT_EQ(old->node, "n1");
    EXPECT_EQ(old->refusal, why);
    const int64_t revision = store_.revision();
    for (const char* hostname : {"n1", "other"}) {
      bool removed = false;
      Result<Json> again = dispatcher_->Register(Registration(hostname, "m1"), Join(), &removed);
      EXPECT_EQ(again.status().code(), StatusCode::kPermissionDenied) << hostname;
      EXPECT_EQ(again.status().message(), why);
      EXPECT_TRUE(removed);
    }
    EXPECT_EQ(store_.revision(), revision);  // a refusal writes nothing
    EXPECT_FALSE(nodes_.Get("n1").ok());
  }
  // The machine with a new identity (its node.json deleted) joins anew.
  Result<Json> anew = dispatcher_->Register(Registration("n1", "m2"), Join());
  ASSERT_TRUE(anew.ok()) << anew.status().message();
  EXPECT_NE((*anew)["credential"], credential);
  EXPECT_EQ(dispatcher_->Authenticate(credential)->kind, Principal::Kind::kRemovedNode);
}

// A node registered through the API has no machine to deny: it may be
// added again.
TEST_F(NodeDispatcherTest, ARemovedApiNodeMayBeAddedAgain) {
  ASSERT_TRUE(nodes_.Register(Json{{"id", "sim"}, {"state", "down"}}).ok());
  ASSERT_TRUE(dispatcher_->Remove("sim", false).ok());
  EXPECT_TRUE(store_.List("node_removed")->empty());
  EXPECT_TRUE(nodes_.Register(Json{{"id", "sim"}}).ok());
}

}  // namespace
}  // namespace berth::daemon
