// Leadership on a real etcd member: one leader at a time, its epoch, and
// the fence that keeps a deposed leader from committing.
#include "daemon/ha/leadership.h"

#include <gtest/gtest.h>

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

// Polls `done` for up to 20 s.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll with a bound
  }
  return true;
}

TEST(Leadership, OneLeadsAndItsWritesAreFencedOnceItsLeaseIsGone) {
  store::EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::shared_ptr<store::EtcdStore> a_store = Open(cluster), b_store = Open(cluster);
  ASSERT_TRUE(a_store && b_store);
  SystemClock clock;
  std::atomic<int64_t> a_epoch{0}, b_epoch{0};
  std::atomic<bool> a_lost{false};
  LeadershipOptions options;
  options.ttl = std::chrono::seconds(3);
  Leadership a(
      *a_store, clock, options, [&](int64_t e) { a_epoch = e; },
      [&](const std::string&) { a_lost = true; });
  a.Start("a", "http://a");
  ASSERT_TRUE(Eventually([&] { return a_epoch.load() != 0; }));
  Leadership b(
      *b_store, clock, options, [&](int64_t e) { b_epoch = e; }, [](const std::string&) {});
  b.Start("b", "http://b");
  ASSERT_TRUE(Eventually([&] { return b.view().leader_id == "a"; }));
  EXPECT_FALSE(b.view().leading);
  EXPECT_EQ(b.view().epoch, a_epoch.load());
  store::WatchedStore a_writes(a_store);
  a_writes.SetFence([&] { return a.Fence(); });
  ASSERT_TRUE(a_writes.Commit({store::Write::Put("task", "t1", "a")}).ok());

  // The key a holds goes away as when its lease expires (a paused a): b
  // leads at a later epoch, and a's writes fail on its fence, before and
  // after it notices.
  ASSERT_TRUE(a_store->Commit({store::Write::Delete(Leadership::kKind, Leadership::kId)}).ok());
  ASSERT_TRUE(Eventually([&] { return b_epoch.load() != 0; }));
  EXPECT_GT(b_epoch.load(), a_epoch.load());
  Result<int64_t> refused = a_writes.Commit({store::Write::Put("task", "t2", "a")});
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("no longer leads"), std::string::npos);
  ASSERT_TRUE(Eventually([&] { return a_lost.load(); }));
  EXPECT_FALSE(a.view().leading);
  EXPECT_EQ(a_writes.Commit({store::Write::Put("task", "t3", "a")}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_FALSE(a_store->Get("task", "t2")->has_value());
  EXPECT_FALSE(a_store->Get("task", "t3")->has_value());
  EXPECT_EQ(b.view().leader_id, "b");
  b.Stop();
  a.Stop();
}

}  // namespace
}  // namespace berth::daemon
