// EtcdStore beyond the Store contract (store_contract_test.cc runs that on
// etcd too): its change feed, its limits and its failover, on real etcd
// members (EtcdTestCluster).
#include "store/etcd_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "store/etcd_test_cluster.h"
#include "store/watched_store.h"

namespace berth::store {
namespace {

std::unique_ptr<EtcdStore> Open(const std::vector<std::string>& endpoints, size_t max_txn_ops = 128,
                                std::vector<std::string> packed_kinds = {"task"}) {
  EtcdStoreOptions options;
  options.client.endpoints = endpoints;
  options.max_txn_ops = max_txn_ops;
  options.packed_kinds = std::move(packed_kinds);
  Result<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status().message();
  return store.ok() ? std::move(*store) : nullptr;
}

std::vector<std::string> IdsOf(const std::vector<StoredObject>& objects) {
  std::vector<std::string> ids;
  for (const StoredObject& o : objects) ids.push_back(o.id);
  return ids;
}

// What a feed handed out, for a test to wait on.
struct Received {
  std::mutex mu;
  std::condition_variable cv;
  std::map<int64_t, std::vector<Change>> commits;  // by revision
  int deliveries = 0;
  std::string lost;

  ChangeFeed::Sink Sink() {
    return {[this](int64_t revision, std::vector<Change> changes) {
              std::lock_guard lock(mu);
              ++deliveries;
              for (Change& c : changes) commits[revision].push_back(std::move(c));
              cv.notify_all();
            },
            [this](const Status& why) {
              std::lock_guard lock(mu);
              lost = why.message();
              cv.notify_all();
            }};
  }
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), done);
  }
};

TEST(EtcdStore, AFeedHandsOutEveryCommitOnceInOrder) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints());
  ASSERT_NE(store, nullptr);
  Received got;
  std::unique_ptr<ChangeFeed::Following> following = store->Follow(store->revision(), got.Sink());
  ASSERT_TRUE(store->Commit({Write::Put("task", "a", "1"), Write::Put("node", "n", "x")}).ok());
  ASSERT_TRUE(store->Commit({Write::Delete("task", "a")}).ok());
  Result<int64_t> last = store->Commit({Write::Put("task", "b", "2")});
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(got.WaitFor([&] { return got.commits.count(*last) == 1; }));
  ASSERT_EQ(got.commits.size(), 3u);
  auto first = got.commits.begin();
  ASSERT_EQ(first->second.size(), 2u);  // one commit's changes together
  EXPECT_EQ(first->second[0].kind + "/" + first->second[0].id, "node/n");
  EXPECT_EQ(first->second[1].body, "1");
  EXPECT_EQ(std::next(first)->second[0].op, Write::Op::kDelete);
  EXPECT_EQ(got.commits[*last][0].body, "2");
  EXPECT_EQ(got.commits[*last][0].revision, *last);
}

TEST(EtcdStore, AFeedBehindACompactionIsLost) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints());
  ASSERT_NE(store, nullptr);
  const int64_t before = store->revision();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Commit({Write::Put("task", "t", "x")}).ok());
  ASSERT_TRUE(store->Compact(store->revision()).ok());
  // etcd's own words come through (its refusals end in an HTTP trailer).
  EXPECT_EQ(store->Compact(before).message(),
            "etcd: etcdserver: mvcc: required revision has been compacted");
  Received got;
  std::unique_ptr<ChangeFeed::Following> following = store->Follow(before, got.Sink());
  ASSERT_TRUE(got.WaitFor([&] { return !got.lost.empty(); }));
  EXPECT_NE(got.lost.find("compacted"), std::string::npos) << got.lost;
  EXPECT_TRUE(got.commits.empty());
}

// A WatchedStore on etcd hands out what another writer committed (it does
// not see that commit itself), and a new Watch lists it.
TEST(EtcdStore, AWatchedStoreSeesAnotherWritersCommits) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::shared_ptr<EtcdStore> etcd = Open(cluster.Endpoints());
  ASSERT_NE(etcd, nullptr);
  WatchedStore watched(etcd);
  ASSERT_TRUE(watched.Watch({"task"}).ok());
  ASSERT_TRUE(etcd->Commit({Write::Put("task", "a", "1")}).ok());
  ASSERT_TRUE(watched.WaitDelivered(etcd->revision(), std::chrono::seconds(20)));
  EXPECT_EQ(watched.TakeChanges().size(), 1u);
  EXPECT_FALSE(watched.lost());
  Result<std::vector<std::vector<StoredObject>>> again = watched.Watch({"task"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].size(), 1u);
}

// Writers committing at once through one WatchedStore share transactions
// (group commit), and each still gets its own answer: a create that lost a
// race for its name is refused, naming it, and another replica's feed
// brings every object that was created.
TEST(EtcdStore, GroupedCommitsAnswerEachWriter) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::shared_ptr<EtcdStore> etcd = Open(cluster.Endpoints());
  ASSERT_NE(etcd, nullptr);
  WatchedStore writer(etcd);
  WatchedStore reader(std::shared_ptr<Store>(Open(cluster.Endpoints())));
  ASSERT_TRUE(reader.Watch({"task"}).ok());
  constexpr int kWriters = 8, kEach = 25;
  std::atomic<int> created{0}, refused{0};
  auto write = [&](bool race) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kWriters; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          const std::string id = race ? "race" + std::to_string(i) : std::to_string(t * kEach + i);
          Result<int64_t> answer = writer.Commit({Write::Create("task", id, "x")});
          if (answer.ok()) {
            ++created;
          } else {
            ++refused;
            EXPECT_EQ(answer.status().message(), "task '" + id + "' already exists");
          }
        }
      });
    for (std::thread& t : threads) t.join();
  };
  write(false);
  EXPECT_EQ(created.load(), kWriters * kEach);
  EXPECT_LT(writer.groups_committed(), writer.batches_committed());  // they were grouped
  write(true);
  EXPECT_EQ(created.load(), kWriters * kEach + kEach);
  EXPECT_EQ(refused.load(), (kWriters - 1) * kEach);
  ASSERT_TRUE(reader.WaitDelivered(writer.revision(), std::chrono::seconds(20)));
  EXPECT_EQ(reader.TakeChanges().size(), static_cast<size_t>(created.load()));
  EXPECT_EQ(etcd->List("task")->size(), static_cast<size_t>(created.load()));
}

TEST(EtcdStore, ABatchOverTheTransactionLimitIsRefusedWhole) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints(), 128);
  ASSERT_NE(store, nullptr);
  std::vector<Write> writes;
  for (int i = 0; i < 129; ++i) writes.push_back(Write::Create("task", std::to_string(i), "x"));
  Result<int64_t> refused = store->Commit(writes);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("--max-txn-ops 128"), std::string::npos);
  EXPECT_TRUE(store->List("task")->empty());
  // A WatchedStore's own commits are split into parts etcd takes.
  WatchedStore watched(std::shared_ptr<Store>(std::move(store)));
  ASSERT_TRUE(watched.CommitOwn(writes).ok());
  EXPECT_EQ(watched.List("task")->size(), 129u);
}

// etcd serving mutual TLS: a client with a certificate of etcd's CA reads,
// writes and follows the changes; one without a certificate, or trusting another CA,
// is refused with the reason.
TEST(EtcdStore, OverMutualTlsOnlyAClientWithACertificateOfEtcdsCaIsServed) {
  TestDir dir;
  const Timestamp now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  const tls::CertificateAuthority ca = tls::CertificateAuthority::Create("test", now).value();
  const EtcdTestTls member = WriteEtcdTestTls(ca, dir.path(), "member");
  EtcdTestCluster cluster(1, {}, member);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  auto open = [&](const EtcdTestTls& files) {
    EtcdStoreOptions options;
    options.client.endpoints = cluster.Endpoints();
    options.client.ca_file = files.ca_file;
    options.client.cert_file = files.cert_file;
    options.client.key_file = files.key_file;
    options.client.retry_for = std::chrono::milliseconds(300);
    return EtcdStore::Open(options);
  };
  Result<std::unique_ptr<EtcdStore>> store = open(WriteEtcdTestTls(ca, dir.path(), "berthd"));
  ASSERT_TRUE(store.ok()) << store.status().message();
  Received got;
  std::unique_ptr<ChangeFeed::Following> following =
      (*store)->Follow((*store)->revision(), got.Sink());
  Result<int64_t> committed = (*store)->Commit({Write::Create("node", "n1", "{}")});
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  EXPECT_EQ((*store)->List("node")->size(), 1u);
  ASSERT_TRUE(got.WaitFor([&] { return got.commits.count(*committed) == 1; }));  // the watch

  Result<std::unique_ptr<EtcdStore>> anonymous = open({member.ca_file, "", ""});
  ASSERT_FALSE(anonymous.ok());
  EXPECT_NE(anonymous.status().message().find("refused this client's certificate"),
            std::string::npos)
      << anonymous.status().message();

  const tls::CertificateAuthority other = tls::CertificateAuthority::Create("other", now).value();
  std::filesystem::create_directory(dir.path() + "/other");
  Result<std::unique_ptr<EtcdStore>> stranger =
      open(WriteEtcdTestTls(other, dir.path() + "/other", "x"));
  ASSERT_FALSE(stranger.ok());
  EXPECT_NE(stranger.status().message().find("does not chain"), std::string::npos)
      << stranger.status().message();
}

// The member a feed and a client use dies: both go on with another, and the
// feed hands out every commit once.
TEST(EtcdStore, AFeedAndCommitsGoOnWhenAMemberDies) {
  EtcdTestCluster cluster(3);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints());
  ASSERT_NE(store, nullptr);
  Received got;
  std::unique_ptr<ChangeFeed::Following> following = store->Follow(store->revision(), got.Sink());
  std::vector<int64_t> revisions;
  for (int i = 0; i < 10; ++i) {
    if (i == 5) cluster.Kill(0);
    Result<int64_t> r = store->Commit({Write::Create("task", "t" + std::to_string(i), "x")});
    ASSERT_TRUE(r.ok()) << r.status().message();
    revisions.push_back(*r);
  }
  ASSERT_TRUE(got.WaitFor([&] { return got.commits.count(revisions.back()) == 1; })) << got.lost;
  EXPECT_TRUE(got.lost.empty());
  ASSERT_EQ(got.commits.size(), 10u);
  for (int64_t r : revisions) EXPECT_EQ(got.commits[r].size(), 1u) << r;
}

// Tasks in blocks (etcd_store.h): two stores write tasks of one block, each
// from the value it last knew. Each task keeps its own revision, a
// precondition is decided per task, and the feed hands out only the tasks
// each write changed, a delete once.
TEST(EtcdStoreBlocks, WritersOfOneBlockKeepEachTasksRevision) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> a = Open(cluster.Endpoints());
  std::unique_ptr<EtcdStore> b = Open(cluster.Endpoints());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  Received got;
  std::unique_ptr<ChangeFeed::Following> following = a->Follow(a->revision(), got.Sink());
  const Result<int64_t> r1 =
      a->Commit({Write::Put("task", "web.1", "1"), Write::Put("task", "web.2", "2")});
  ASSERT_TRUE(r1.ok()) << r1.status().message();
  const Result<int64_t> r2 = b->Commit({Write::Put("task", "web.2", "2b").IfRevision(*r1)});
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  // `a` still knows the block at r1: its write is tried again on r2's.
  const Result<int64_t> r3 = a->Commit({Write::Put("task", "web.1", "1a").IfRevision(*r1)});
  ASSERT_TRUE(r3.ok()) << r3.status().message();
  EXPECT_EQ(a->Commit({Write::Put("task", "web.2", "2a").IfRevision(*r1)}).status().message(),
            "task 'web.2' changed: expected revision " + std::to_string(*r1) + ", found " +
                std::to_string(*r2));
  EXPECT_EQ(b->Commit({Write::Create("task", "web.1", "x")}).status().message(),
            "task 'web.1' already exists");
  EXPECT_EQ(**a->Get("task", "web.1"), (StoredObject{"task", "web.1", "1a", *r3}));
  EXPECT_EQ(**b->Get("task", "web.2"), (StoredObject{"task", "web.2", "2b", *r2}));
  const Result<int64_t> r4 = b->Commit({Write::Delete("task", "web.1")});
  const Result<int64_t> r5 = a->Commit({Write::Put("task", "web.3", "3")});
  ASSERT_TRUE(r4.ok() && r5.ok());
  EXPECT_EQ(IdsOf(*a->List("task")), (std::vector<std::string>{"web.2", "web.3"}));
  ASSERT_TRUE(got.WaitFor([&] { return got.commits.count(*r5) == 1; })) << got.lost;
  const auto ids = [&](int64_t r) {
    std::vector<std::string> out;
    for (const Change& c : got.commits[r])
      out.push_back((c.op == Write::Op::kDelete ? "-" : "") + c.id + "@" +
                    std::to_string(c.revision));
    return out;
  };
  const auto at = [](const char* id, int64_t r) {
    return std::string(id) + "@" + std::to_string(r);
  };
  EXPECT_EQ(ids(*r1), (std::vector<std::string>{at("web.1", *r1), at("web.2", *r1)}));
  EXPECT_EQ(ids(*r2), (std::vector<std::string>{at("web.2", *r2)}));
  EXPECT_EQ(ids(*r3), (std::vector<std::string>{at("web.1", *r3)}));
  EXPECT_EQ(ids(*r4), (std::vector<std::string>{at("-web.1", *r4)}));
  EXPECT_EQ(ids(*r5), (std::vector<std::string>{at("web.3", *r5)}));  // the tombstone went quietly
  EXPECT_EQ(got.commits.size(), 5u);
}

// A store of an earlier layout (a task to a key) is moved into blocks when
// a store opens it, bodies unchanged, and the old keys are gone.
TEST(EtcdStoreBlocks, TasksKeptOneToAKeyAreMovedIntoBlocks) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> old = Open(cluster.Endpoints(), 128, {});
  ASSERT_NE(old, nullptr);
  std::vector<Write> writes = {Write::Put("node", "n1", "n")};
  for (int i = 0; i < 40; ++i)
    writes.push_back(Write::Put("task", "web." + std::to_string(i), "body " + std::to_string(i)));
  ASSERT_TRUE(old->Commit(writes).ok());
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints());
  ASSERT_NE(store, nullptr);
  const std::vector<StoredObject> tasks = *store->List("task");
  ASSERT_EQ(tasks.size(), 40u);
  EXPECT_EQ(tasks[0].id, "web.0");
  EXPECT_EQ(tasks[0].body, "body 0");
  EXPECT_EQ((*store->Get("task", "web.39"))->body, "body 39");
  EXPECT_TRUE(old->List("task")->empty());  // no key of the old layout is left
  EXPECT_EQ(old->List("node")->size(), 1u);
  EXPECT_EQ(Open(cluster.Endpoints())->List("task")->size(), 40u);  // opened again: nothing moves
  // A berthd of the earlier layout still running writes a task again: the
  // next open moves that later write over the block's.
  ASSERT_TRUE(old->Commit({Write::Put("task", "web.3", "later")}).ok());
  EXPECT_EQ((*Open(cluster.Endpoints())->Get("task", "web.3"))->body, "later");
  EXPECT_TRUE(old->List("task")->empty());
}

TEST(EtcdStoreBlocks, AKindNamedLikeBlocksCannotBePacked) {
  EtcdStoreOptions options;
  options.client.endpoints = {"127.0.0.1:1"};
  options.packed_kinds = {"task-blocks"};
  EXPECT_EQ(EtcdStore::Open(options).status().message(),
            "etcd: a packed kind must be a kind's name, not 'task-blocks'");
}

// A block whose tasks were all deleted keeps their tombstones until a
// compaction, which deletes it; the feed says nothing more of it.
TEST(EtcdStoreBlocks, ACompactionDropsBlocksWithoutTasks) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints());
  std::unique_ptr<EtcdStore> raw = Open(cluster.Endpoints(), 128, {});  // sees the blocks' keys
  ASSERT_NE(store, nullptr);
  ASSERT_NE(raw, nullptr);
  ASSERT_TRUE(store
                  ->Commit({Write::Put("task", "web.1", "a"), Write::Put("task", "web.2", "b"),
                            Write::Put("task", "web.20", "c")})
                  .ok());
  const Result<int64_t> deleted =
      store->Commit({Write::Delete("task", "web.1"), Write::Delete("task", "web.2")});
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(IdsOf(*raw->List("task-blocks")), (std::vector<std::string>{"web.0", "web.1"}));
  Received got;
  std::unique_ptr<ChangeFeed::Following> following = store->Follow(*deleted, got.Sink());
  ASSERT_TRUE(store->Compact(*deleted).ok());
  // The drop runs on a thread of its own; its revision reaches the feed
  // with no change to tell.
  ASSERT_TRUE(got.WaitFor([&] { return got.deliveries == 1; })) << got.lost;
  EXPECT_TRUE(got.commits.empty());
  EXPECT_EQ(IdsOf(*raw->List("task-blocks")), (std::vector<std::string>{"web.1"}));
  EXPECT_EQ(IdsOf(*store->List("task")), (std::vector<std::string>{"web.20"}));
  // The block can be written again, and the feed hands out that write only.
  const Result<int64_t> again = store->Commit({Write::Create("task", "web.3", "d")});
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_TRUE(got.WaitFor([&] { return got.commits.count(*again) == 1; })) << got.lost;
  EXPECT_EQ(got.commits.size(), 1u);
  ASSERT_EQ(got.commits[*again].size(), 1u);
  EXPECT_EQ(got.commits[*again][0].id, "web.3");
}

// A pass's tasks are split by what etcd is sent: a put a block of 16 tasks,
// with the block's whole value.
TEST(EtcdStoreBlocks, APassIsSplitByBlocks) {
  EtcdTestCluster cluster(1);
  ASSERT_TRUE(cluster.ok()) << cluster.error();
  std::unique_ptr<EtcdStore> store = Open(cluster.Endpoints());
  ASSERT_NE(store, nullptr);
  const auto tasks = [](int n, size_t bytes) {
    std::vector<Write> writes;
    for (int i = 0; i < n; ++i)
      writes.push_back(Write::Put("task", "big." + std::to_string(i), std::string(bytes, 'x')));
    return writes;
  };
  EXPECT_EQ(store->PartsForCommit(tasks(128 * 16, 100), {}).size(), 1u);
  EXPECT_EQ(store->PartsForCommit(tasks(128 * 16 + 1, 100), {}).size(), 2u);
  EXPECT_EQ(store->PartsForCommit({Write::Put("node", "a", "")}, {}).size(), 1u);
  // A block's writes stay together, wherever they are in the batch.
  std::vector<Write> mixed = tasks(128 * 16, 100);
  std::sort(mixed.begin(), mixed.end(), [](const Write& a, const Write& b) { return a.id < b.id; });
  mixed.push_back(Write::Put("node", "b", ""));
  const std::vector<std::vector<size_t>> split =
      store->PartsForCommit(mixed, {Write::Check("leader", "l", 0)});
  ASSERT_EQ(split.size(), 2u);
  std::map<std::string, std::set<size_t>> parts_of_block;
  size_t total = 0;
  for (size_t p = 0; p < split.size(); ++p) {
    EXPECT_TRUE(std::is_sorted(split[p].begin(), split[p].end()));
    total += split[p].size();
    for (size_t i : split[p])
      if (mixed[i].kind == "task") parts_of_block[blocks::BlockOf(mixed[i].id)].insert(p);
  }
  EXPECT_EQ(total, mixed.size());
  EXPECT_EQ(parts_of_block.size(), 128u);
  for (const auto& [block, parts] : parts_of_block) EXPECT_EQ(parts.size(), 1u) << block;
  // Large bodies: fewer blocks a part, and etcd takes every part.
  std::vector<Write> large = tasks(64, 40000);
  const std::vector<std::vector<size_t>> parts = store->PartsForCommit(large, {});
  EXPECT_GT(parts.size(), 1u);
  for (const std::vector<size_t>& part : parts) {
    const Result<int64_t> r = store->Commit(Gather(large, part, {}));
    EXPECT_TRUE(r.ok()) << r.status().message();
  }
  EXPECT_EQ(store->List("task")->size(), 64u);
  for (const std::vector<size_t>& part : store->PartsForCommit(mixed, {}))
    ASSERT_TRUE(store->Commit(Gather(mixed, part, {})).ok());
  EXPECT_EQ(store->List("task")->size(), 128u * 16);
}

// A lost answer settled from the block's history (BlockWriteAppliedAt),
// on a history the test writes: revision -> the block's value from then on
// ("" : deleted).
TEST(EtcdStoreBlocks, ALostAnswerIsSettledByTheBlocksFirstWriteAfterItWasSent) {
  const auto settle = [](std::map<int64_t, std::string> history, int64_t before, int64_t compared,
                         const std::string& value) {
    const int64_t now = history.rbegin()->first + 3;
    return BlockWriteAppliedAt(
        [&](int64_t at) -> Result<KeyAtRevision> {
          if (at == 0) at = now;
          KeyAtRevision read{at, std::nullopt};
          auto it = history.upper_bound(at);
          if (it == history.begin()) return read;
          --it;
          if (it->second.empty()) return read;
          mvccpb::KeyValue kv;
          kv.set_mod_revision(it->first);
          kv.set_value(it->second);
          read.kv = kv;
          return read;
        },
        before, compared, value);
  };
  const auto at = [](int64_t r) { return std::optional<int64_t>(r); };
  const std::optional<int64_t> no;
  // Ours applied at 12, another writer's came after it.
  EXPECT_EQ(*settle({{5, "a"}, {12, "ours"}, {15, "c"}}, 10, 5, "ours"), at(12));
  // Another writer's came first: ours was refused.
  EXPECT_EQ(*settle({{5, "a"}, {12, "c"}, {15, "ours"}}, 10, 5, "ours"), no);
  // The block had changed before ours was sent.
  EXPECT_EQ(*settle({{5, "a"}, {8, "b"}, {12, "ours"}}, 10, 5, "ours"), no);
  // Nothing since.
  EXPECT_EQ(*settle({{5, "a"}}, 10, 5, "ours"), no);
  // Ours, then the block dropped at a compaction.
  EXPECT_EQ(*settle({{5, "a"}, {12, "ours"}, {20, ""}}, 10, 5, "ours"), at(12));
  // Ours made the block; or it compared "absent" on a block that existed.
  EXPECT_EQ(*settle({{2, "x"}, {11, "ours"}}, 10, 0, "ours"), no);
  EXPECT_EQ(*settle({{11, "ours"}, {40, "d"}}, 10, 0, "ours"), at(11));
  // The same bytes as before ours (the value ours would write) are not ours.
  EXPECT_EQ(*settle({{5, "ours"}, {13, "c"}}, 10, 5, "ours"), no);
  // A read that fails (a compacted revision) fails the settling.
  EXPECT_FALSE(BlockWriteAppliedAt(
                   [](int64_t) -> Result<KeyAtRevision> {
                     return Status::InvalidArgument("etcd: compacted");
                   },
                   10, 5, "ours")
                   .ok());
}

}  // namespace
}  // namespace berth::store
