// ReadCache on a feed driven by the test (its list, its changes, its loss),
// then on real etcd through WatchedStore::CacheReads, where a list must see
// every write acknowledged before it, whichever client made it.
#include "store/read_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/etcd_store.h"
#include "store/etcd_test_cluster.h"
#include "store/watched_store.h"

namespace berth::store {
namespace {

// A feed whose state and changes the test sets.
class TestFeed final : public ChangeFeed {
 public:
  Result<int64_t> LatestRevision() override { return revision; }
  Result<Snapshot> ListAtOneRevision(const std::vector<std::string>& kinds) override {
    ++listed;
    Snapshot snapshot{revision, {}};
    for (const std::string& kind : kinds) {
      snapshot.kinds.emplace_back();
      for (const StoredObject& o : objects)
        if (o.kind == kind) snapshot.kinds.back().push_back(o);
    }
    return snapshot;
  }
  std::unique_ptr<Following> Follow(int64_t from, Sink s) override {
    followed_from = from;
    sink = std::move(s);
    return std::make_unique<Following>();
  }

  std::vector<StoredObject> objects;  // by id
  int64_t revision = 0;
  int listed = 0;
  int64_t followed_from = -1;
  Sink sink;
};

std::vector<std::string> Ids(const std::optional<std::vector<StoredObject>>& objects) {
  std::vector<std::string> ids;
  if (objects)
    for (const StoredObject& o : *objects) ids.push_back(o.id + "@" + std::to_string(o.revision));
  return ids;
}

constexpr Duration kNoWait{0};

TEST(ReadCache, ListsOnceThenAppliesTheFeedsChanges) {
  TestFeed feed;
  feed.objects = {{"task", "a.1", "{}", 3}, {"task", "b.1", "{}", 4}, {"node", "n", "{}", 2}};
  feed.revision = 4;
  ReadCache cache(feed, {"task"});
  EXPECT_TRUE(cache.Holds("task"));
  EXPECT_FALSE(cache.Holds("node"));
  EXPECT_FALSE(cache.ListPrefix("node", "", 4, kNoWait));  // not held: the store answers
  EXPECT_EQ(Ids(cache.ListPrefix("task", "", 4, kNoWait)),
            (std::vector<std::string>{"a.1@3", "b.1@4"}));
  EXPECT_EQ(feed.followed_from, 4);
  feed.sink.changed(6, {{Write::Op::kDelete, "task", "a.1", "", 6},
                        {Write::Op::kPut, "task", "a.2", "{}", 6},
                        {Write::Op::kPut, "node", "m", "{}", 6}});
  EXPECT_EQ(Ids(cache.ListPrefix("task", "a.", 6, kNoWait)), (std::vector<std::string>{"a.2@6"}));
  EXPECT_EQ(Ids(cache.ListPrefix("task", "", 6, kNoWait)),
            (std::vector<std::string>{"a.2@6", "b.1@4"}));
  EXPECT_EQ(feed.listed, 1);
  EXPECT_EQ(cache.lists(), 1u);
  EXPECT_EQ(cache.served(), 3u);
  EXPECT_EQ(cache.revision(), 6);
}

// A read for a revision the feed has not brought yet waits for it.
TEST(ReadCache, AReadWaitsForTheRevisionItNeeds) {
  TestFeed feed;
  feed.revision = 1;
  ReadCache cache(feed, {"task"});
  ASSERT_TRUE(cache.ListPrefix("task", "", 1, kNoWait));
  std::thread later([&] { feed.sink.changed(2, {{Write::Op::kPut, "task", "t", "{}", 2}}); });
  EXPECT_EQ(Ids(cache.ListPrefix("task", "", 2, Duration{20000})),
            (std::vector<std::string>{"t@2"}));
  later.join();
}

// A revision the feed never brings (a write outside Berth's keys) is
// waited for once; later reads do not wait until the feed passes it.
TEST(ReadCache, ARevisionThatNeverComesIsWaitedForOnce) {
  TestFeed feed;
  feed.revision = 4;
  ReadCache cache(feed, {"task"});
  ASSERT_TRUE(cache.ListPrefix("task", "", 4, kNoWait));
  EXPECT_FALSE(cache.ListPrefix("task", "", 5, Duration{10}));
  // Would wait an hour if it waited at all.
  EXPECT_FALSE(cache.ListPrefix("task", "", 5, std::chrono::hours(1)));
  feed.sink.changed(6, {{Write::Op::kPut, "task", "t", "{}", 6}});
  EXPECT_EQ(Ids(cache.ListPrefix("task", "", 6, kNoWait)), (std::vector<std::string>{"t@6"}));
}

// Once the feed is lost, the cache answers nothing until the next read
// lists again, and then holds the store's state.
TEST(ReadCache, ALostFeedIsListedAgain) {
  TestFeed feed;
  feed.objects = {{"task", "old", "{}", 1}};
  feed.revision = 1;
  ReadCache cache(feed, {"task"});
  ASSERT_TRUE(cache.ListPrefix("task", "", 1, kNoWait));
  feed.sink.lost(Status::Unavailable("compacted"));
  feed.objects = {{"task", "new", "{}", 9}};
  feed.revision = 9;
  EXPECT_EQ(Ids(cache.ListPrefix("task", "", 9, kNoWait)), (std::vector<std::string>{"new@9"}));
  EXPECT_EQ(cache.lists(), 2u);
  EXPECT_EQ(feed.followed_from, 9);
}

// A one-member etcd, a client that writes to it, and a replica whose task
// lists come from its read cache.
class ReadCacheOnEtcd : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.ok()) << cluster_.error();
    options_.client.endpoints = cluster_.Endpoints();
    writer_ = std::move(EtcdStore::Open(options_).value());
    reader_ = std::make_unique<WatchedStore>(
        std::shared_ptr<Store>(std::move(EtcdStore::Open(options_).value())));
    reader_->CacheReads({"task"});
  }

  EtcdTestCluster cluster_{1};
  EtcdStoreOptions options_;
  std::unique_ptr<EtcdStore> writer_;
  std::unique_ptr<WatchedStore> reader_;
};

// A replica's lists come from its cache and still show, at once, what
// another client has just committed.
TEST_F(ReadCacheOnEtcd, AListSeesEveryWriteAcknowledgedBeforeIt) {
  EtcdStore* writer = writer_.get();
  WatchedStore& reader = *reader_;
  for (int round = 0; round < 20; ++round) {
    const std::string id = "t" + std::to_string(round);
    ASSERT_TRUE(writer->Commit({Write::Create("task", id, std::to_string(round))}).ok());
    if (round > 0) {
      const std::string previous = "t" + std::to_string(round - 1);
      ASSERT_TRUE(writer->Commit({Write::Delete("task", previous)}).ok());
    }
    Result<std::vector<StoredObject>> cached = reader.List("task");
    ASSERT_TRUE(cached.ok());
    EXPECT_EQ(*cached, writer->List("task").value()) << "round " << round;
  }
  ASSERT_NE(reader.read_cache(), nullptr);
  EXPECT_EQ(reader.read_cache()->served(), 20u);
  EXPECT_EQ(reader.read_cache()->lists(), 1u);
  EXPECT_TRUE(reader.List("node")->empty());  // not cached: read from etcd
  EXPECT_EQ(reader.read_cache()->served(), 20u);
}

// On an etcd that another program writes too: lists stay right (read from
// etcd while the cache waits for a revision it will not see), and the cache
// serves again once Berth's own writes pass that revision.
TEST_F(ReadCacheOnEtcd, OnASharedEtcdListsStayRight) {
  EtcdStore* writer = writer_.get();
  WatchedStore& reader = *reader_;
  EtcdStoreOptions other_options = options_;
  other_options.prefix = "/other/";
  std::unique_ptr<EtcdStore> other = std::move(EtcdStore::Open(other_options).value());
  ASSERT_TRUE(writer->Commit({Write::Create("task", "a", "1")}).ok());
  ASSERT_EQ(reader.List("task")->size(), 1u);
  ASSERT_EQ(reader.read_cache()->served(), 1u);
  ASSERT_TRUE(other->Commit({Write::Create("task", "x", "1")}).ok());
  ASSERT_TRUE(writer->Commit({Write::Delete("task", "a")}).ok());
  ASSERT_TRUE(other->Commit({Write::Create("task", "y", "1")}).ok());
  EXPECT_TRUE(reader.List("task")->empty());  // waited in vain, then read etcd
  EXPECT_TRUE(reader.List("task")->empty());  // read etcd at once
  EXPECT_EQ(reader.read_cache()->served(), 1u);
  const Result<int64_t> b = writer->Commit({Write::Create("task", "b", "2")});
  ASSERT_TRUE(b.ok());
  // Until the feed brings b, past the revision waited for in vain, lists
  // still read etcd at once: wait for it (bounded).
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       reader.read_cache()->revision() < *b && std::chrono::steady_clock::now() < until;)
    std::this_thread::yield();
  Result<std::vector<StoredObject>> listed = reader.List("task");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().id, "b");
  EXPECT_EQ(reader.read_cache()->served(), 2u);
}

}  // namespace
}  // namespace berth::store
