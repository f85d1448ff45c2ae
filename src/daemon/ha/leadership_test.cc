// Leadership on a real etcd member: one leader at a time, its epoch, and
// the fence that keeps a deposed leader from committing.
#include "daemon/ha/leadership.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>

#include "store/etcd_test_cluster.h"
#include "store/watched_store.h"

namespace berth::daemon {
namespace {

std::shared_ptr<store::EtcdStore> Open(const store::EtcdTestCluster& cluster) {
  store::EtcdStoreOptions options;
  options.client.endpoints = cluster.Endpoints();
  Result<std::unique_ptr<store::EtcdStore>> opened = store::EtcdStore::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  return opened.ok() ? std::shared_ptr<store::EtcdStore>(std::move(*opened)) : nullptr;
}

// Polls `done` for up to `bound`.
bool Eventually(const std::function<bool()>& done,
                std::chrono::seconds bound = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll with a bound
  }
  return true;
}

// A replica on its own connection to etcd: its Leadership, started as
// `id`, and what its callbacks said.
struct Replica {
  Replica(const store::EtcdTestCluster& cluster, const Clock& clock, Duration ttl,
          const std::string& id)
      : store(Open(cluster)) {
    if (store == nullptr) return;
    LeadershipOptions options;
    options.ttl = ttl;
    leadership = std::make_unique<Leadership>(
        *store, clock, options, [this](int64_t e) { epoch = e; },
        [this](const std::string&) { lost = true; });
    leadership->Start(id, "http://" + id);
  }
  std::shared_ptr<store::EtcdStore> store;
  std::atomic<int64_t> epoch{0};
  std::atomic<bool> lost{false};
  std::unique_ptr<Leadership> leadership;  // stopped before the store goes
};

TEST(Leadership, OneLeadsAndItsWritesAreFencedOnceItsLeaseIsGone) {
  store::EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  SystemClock clock;
  Replica a(cluster, clock, std::chrono::seconds(3), "a");
  ASSERT_TRUE(a.leadership);
  ASSERT_TRUE(Eventually([&] { return a.epoch.load() != 0; }));
  Replica b(cluster, clock, std::chrono::seconds(3), "b");
  ASSERT_TRUE(b.leadership);
  ASSERT_TRUE(Eventually([&] { return b.leadership->view().leader_id == "a"; }));
  EXPECT_FALSE(b.leadership->view().leading);
  EXPECT_EQ(b.leadership->view().epoch, a.epoch.load());
  store::WatchedStore a_writes(a.store);
  a_writes.SetFence([&] { return a.leadership->Fence(); });
  ASSERT_TRUE(a_writes.Commit({store::Write::Put("task", "t1", "a")}).ok());

  // The key a holds goes away as when its lease expires (a paused a): b
  // leads at a later epoch, and a's writes fail on its fence, before and
  // after it notices.
  ASSERT_TRUE(a.store->Commit({store::Write::Delete(Leadership::kKind, Leadership::kId)}).ok());
  ASSERT_TRUE(Eventually([&] { return b.epoch.load() != 0; }));
  EXPECT_GT(b.epoch.load(), a.epoch.load());
  Result<int64_t> refused = a_writes.Commit({store::Write::Put("task", "t2", "a")});
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("no longer leads"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return a.lost.load(); }));
  EXPECT_FALSE(a.leadership->view().leading);
  EXPECT_EQ(a_writes.Commit({store::Write::Put("task", "t3", "a")}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_FALSE(a.store->Get("task", "t2")->has_value());
  EXPECT_FALSE(a.store->Get("task", "t3")->has_value());
  EXPECT_EQ(b.leadership->view().leader_id, "b");
}

// A follower campaigns as soon as its watch sees the leader's key deleted
// (a lease expired or was revoked), not at its next try a third of the ttl
// later: here 20 s, against a bound of 10.
TEST(Leadership, AFollowerCampaignsAsSoonAsTheLeadersKeyIsDeleted) {
  store::EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  SystemClock clock;
  Replica a(cluster, clock, std::chrono::seconds(60), "a");
  ASSERT_TRUE(a.leadership);
  ASSERT_TRUE(Eventually([&] { return a.epoch.load() != 0; }));
  Replica b(cluster, clock, std::chrono::seconds(60), "b");
  ASSERT_TRUE(b.leadership);
  ASSERT_TRUE(Eventually([&] { return b.leadership->view().leader_id == "a"; }));
  ASSERT_TRUE(a.store->Commit({store::Write::Delete(Leadership::kKind, Leadership::kId)}).ok());
  EXPECT_TRUE(Eventually([&] { return b.epoch.load() != 0; }, std::chrono::seconds(10)));
  EXPECT_GT(b.epoch.load(), a.epoch.load());
}

// etcd's leader stalls (SIGSTOP: its connections stay open and hang, as a
// paused machine's would): the keepalives asked of it, and of the members
// that forward to it, wait until they give up, and the others elect a new
// etcd leader. The berthd leader rides it out, no other replica takes the
// key, and it goes on leading once the stalled member wakes (its lessor,
// which may think the lease expired, is no longer etcd's). The ttl is 5 s, not the default, so that
// a split vote among the two left (two rounds, up to 4 s) cannot make it flaky.
TEST(Leadership, ALeaderRidesOutAStalledEtcdLeader) {
  store::EtcdTestCluster cluster(3);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  SystemClock clock;
  Replica a(cluster, clock, std::chrono::seconds(5), "a");
  ASSERT_TRUE(a.leadership);
  ASSERT_TRUE(Eventually([&] { return a.epoch.load() != 0; }));
  Replica b(cluster, clock, std::chrono::seconds(5), "b");
  ASSERT_TRUE(b.leadership);
  ASSERT_TRUE(Eventually([&] { return b.leadership->view().leader_id == "a"; }));
  const int stalled = cluster.Leader();
  ASSERT_GE(stalled, 0);
  const Duration before = a.leadership->longest_unconfirmed();
  ASSERT_EQ(::kill(cluster.pid(stalled), SIGSTOP), 0);
  // A keepalive confirmed after a longer gap than any before: one went
  // through after the stall.
  const bool renewed_after_stall = Eventually([&] {
    const Duration gap = a.leadership->longest_unconfirmed();
    return a.lost.load() || (gap > before && gap > std::chrono::milliseconds(500));
  });
  ASSERT_EQ(::kill(cluster.pid(stalled), SIGCONT), 0);
  EXPECT_TRUE(renewed_after_stall);
  EXPECT_TRUE(cluster.WaitHealthy(stalled)) << cluster.error();
  EXPECT_FALSE(a.lost.load());
  EXPECT_TRUE(a.leadership->view().leading);
  EXPECT_EQ(b.epoch.load(), 0);
  EXPECT_EQ(b.leadership->view().leader_id, "a");
}

}  // namespace
}  // namespace berth::daemon
