// The Store contract (store.h), run once against every implementation.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "store/etcd_store.h"
#include "store/etcd_test_cluster.h"
#include "store/memory_store.h"
#include "store/sqlite_store.h"
#include "store/test_dir.h"
#include "store/watched_store.h"

namespace berth::store {
namespace {

struct Backend {
  std::string name;
  std::function<std::unique_ptr<Store>(const std::string& dir)> open;
};

// Names the back end in test output instead of dumping its bytes.
void PrintTo(const Backend& backend, std::ostream* out) { *out << backend.name; }

// Revisions are counted from the store's revision at the start (`base_`):
// a new etcd cluster starts at 1, and this process is its only writer.
class StoreContract : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    store_ = GetParam().open(dir_.path());
    ASSERT_NE(store_, nullptr);
    base_ = store_->revision();
  }
  int64_t At(int64_t commits) const { return base_ + commits; }
  TestDir dir_;
  std::unique_ptr<Store> store_;
  int64_t base_ = 0;
};

// One etcd member per process (under ctest, per test), taking transactions
// as large as the largest batch below.
std::unique_ptr<Store> OpenEtcd() {
  static EtcdTestCluster cluster(1, {"--max-txn-ops=1024"});
  EXPECT_TRUE(cluster.ok()) << cluster.error();
  if (!cluster.ok()) return nullptr;
  EtcdStoreOptions options;
  options.client.endpoints = cluster.Endpoints();
  options.max_txn_ops = 1024;
  options.page_size = 7;  // lists take several pages
  static int tests = 0;   // a prefix per test: one process may run several
  options.prefix = "/contract" + std::to_string(++tests) + "/";
  Result<std::unique_ptr<EtcdStore>> opened = EtcdStore::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  if (!opened.ok()) return nullptr;
  return std::move(*opened);
}

std::vector<std::string> Ids(const std::vector<StoredObject>& objects) {
  std::vector<std::string> ids;
  for (const auto& o : objects) ids.push_back(o.id);
  return ids;
}

TEST_P(StoreContract, ANewStoreIsEmpty) {
  EXPECT_TRUE(store_->List("node")->empty());
  EXPECT_FALSE(store_->Get("node", "n1")->has_value());
}

TEST_P(StoreContract, CommitIsAtomicAndBumpsTheRevisionOnce) {
  Result<int64_t> r =
      store_->Commit({Write::Put("node", "n2", "{2}"), Write::Put("node", "n1", "{1}"),
                      Write::Put("task", "t1", "{t}")});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, At(1));
  EXPECT_EQ(store_->revision(), At(1));
  EXPECT_EQ(Ids(*store_->List("node")), (std::vector<std::string>{"n1", "n2"}));  // ordered by id
  std::optional<StoredObject> n1 = *store_->Get("node", "n1");
  ASSERT_TRUE(n1.has_value());
  EXPECT_EQ(*n1, (StoredObject{"node", "n1", "{1}", At(1)}));
}

TEST_P(StoreContract, AFailedPreconditionAppliesNothing) {
  ASSERT_TRUE(store_->Commit({Write::Create("node", "n1", "a")}).ok());
  Result<int64_t> r =
      store_->Commit({Write::Put("node", "n2", "b"), Write::Create("node", "n1", "c")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kConflict);
  EXPECT_EQ(r.status().message(), "node 'n1' already exists");
  EXPECT_EQ(store_->revision(), At(1));
  EXPECT_FALSE(store_->Get("node", "n2")->has_value());
  EXPECT_EQ((*store_->Get("node", "n1"))->body, "a");
}

TEST_P(StoreContract, CompareAndSetOnRevision) {
  ASSERT_TRUE(store_->Commit({Write::Put("svc", "web", "v1")}).ok());
  ASSERT_TRUE(store_->Commit({Write::Put("svc", "other", "x")}).ok());
  Write stale = Write::Put("svc", "web", "v2");
  stale.IfRevision(At(2));
  Result<int64_t> r = store_->Commit({stale});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "svc 'web' changed: expected revision " + std::to_string(At(2)) +
                                      ", found " + std::to_string(At(1)));
  Write fresh = Write::Put("svc", "web", "v2");
  fresh.IfRevision(At(1));
  ASSERT_TRUE(store_->Commit({fresh}).ok());
  EXPECT_EQ((*store_->Get("svc", "web"))->revision, At(3));
  Write gone = Write::Put("svc", "nothing", "x");
  gone.expect = Write::Expect::kRevision;
  gone.expected_revision = At(1);
  EXPECT_EQ(store_->Commit({gone}).status().message(), "svc 'nothing' does not exist");
}

TEST_P(StoreContract, PreconditionsSeeEarlierWritesOfTheBatch) {
  Result<int64_t> r =
      store_->Commit({Write::Create("job", "j", "1"), Write::Create("job", "j", "2")});
  EXPECT_EQ(r.status().code(), StatusCode::kConflict);
  EXPECT_EQ(store_->revision(), At(0));
  ASSERT_TRUE(store_
                  ->Commit({Write::Create("job", "j", "1"), Write::Delete("job", "j"),
                            Write::Create("job", "j", "3")})
                  .ok());
  EXPECT_EQ((*store_->Get("job", "j"))->body, "3");
}

// Many creations in one batch (a large service's tasks), the collision at
// any position, also between two creations of the batch itself.
TEST_P(StoreContract, ALargeBatchOfCreationsIsAllOrNothing) {
  ASSERT_TRUE(store_->Commit({Write::Create("task", "t.070", "old")}).ok());
  auto creations = [](int from, int to) {
    std::vector<Write> writes;
    for (int i = from; i < to; ++i) {
      const std::string n = std::to_string(i);
      writes.push_back(Write::Create("task", "t." + std::string(3 - n.size(), '0') + n, n));
    }
    return writes;
  };
  Result<int64_t> r = store_->Commit(creations(0, 100));  // t.070 exists
  EXPECT_EQ(r.status().message(), "task 't.070' already exists");
  std::vector<Write> twice = creations(100, 200);
  twice.push_back(twice[5]);
  EXPECT_EQ(store_->Commit(twice).status().message(), "task 't.105' already exists");
  EXPECT_EQ(store_->revision(), At(1));
  EXPECT_EQ(store_->List("task")->size(), 1u);
  std::vector<Write> ok = creations(0, 70);
  for (Write& w : creations(71, 250)) ok.push_back(std::move(w));
  r = store_->Commit(ok);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<StoredObject> tasks = *store_->List("task");
  ASSERT_EQ(tasks.size(), 250u);
  EXPECT_EQ(tasks[249], (StoredObject{"task", "t.249", "249", At(2)}));
  EXPECT_EQ(tasks[70].body, "old");
}

TEST_P(StoreContract, DeleteRemovesAndEmptyBatchChangesNothing) {
  ASSERT_TRUE(store_->Commit({Write::Put("node", "n1", "a"), Write::Put("node", "n2", "b")}).ok());
  ASSERT_TRUE(store_->Commit({Write::Delete("node", "n1"), Write::Delete("node", "absent")}).ok());
  EXPECT_EQ(Ids(*store_->List("node")), (std::vector<std::string>{"n2"}));
  EXPECT_EQ(*store_->Commit({}), At(2));
  EXPECT_EQ(store_->revision(), At(2));
}

// A prefix reads one range of ids, of one kind, in order: a service's
// tasks "web.<slot>.<serial>" without "web2"'s or another kind's.
TEST_P(StoreContract, APrefixListsOneRangeOfIds) {
  std::vector<Write> writes;
  for (const char* id : {"web.2.7", "web.1.9", "web.10.3", "web2.1.4", "wea.1.1", "web."})
    writes.push_back(Write::Put("task", id, "{}"));
  writes.push_back(Write::Put("service", "web.1.1", "{}"));
  ASSERT_TRUE(store_->Commit(writes).ok());
  EXPECT_EQ(Ids(*store_->ListPrefix("task", "web.")),
            (std::vector<std::string>{"web.", "web.1.9", "web.10.3", "web.2.7"}));
  EXPECT_EQ(Ids(*store_->ListPrefix("task", "web.1.")), (std::vector<std::string>{"web.1.9"}));
  EXPECT_TRUE(store_->ListPrefix("task", "api.")->empty());
  EXPECT_EQ(store_->ListPrefix("task", "")->size(), 6u);
}

TEST_P(StoreContract, BodiesAreKeptByteForByte) {
  const std::string body("{\"a\":\"\xc3\xa9\"}\0tail", 15);
  ASSERT_TRUE(store_->Commit({Write::Put("k", "id with spaces/and:colons", body)}).ok());
  EXPECT_EQ((*store_->Get("k", "id with spaces/and:colons"))->body, body);
}

// A Check writes nothing; its batch applies only while the object is at
// the revision (a leader's fence on its leadership key).
TEST_P(StoreContract, ACheckGuardsTheBatchAndWritesNothing) {
  ASSERT_TRUE(store_->Commit({Write::Put("leader", "berthd", "me")}).ok());
  ASSERT_TRUE(
      store_->Commit({Write::Check("leader", "berthd", At(1)), Write::Put("task", "t1", "a")})
          .ok());
  ASSERT_TRUE(store_->Commit({Write::Put("leader", "berthd", "other")}).ok());  // At(3)
  Result<int64_t> fenced =
      store_->Commit({Write::Check("leader", "berthd", At(1)), Write::Put("task", "t2", "b")});
  EXPECT_EQ(fenced.status().message(), "leader 'berthd' changed: expected revision " +
                                           std::to_string(At(1)) + ", found " +
                                           std::to_string(At(3)));
  EXPECT_FALSE(store_->Get("task", "t2")->has_value());
  EXPECT_EQ(store_->Commit({Write::Check("leader", "nobody", 0), Write::Put("task", "t3", "c")})
                .status()
                .code(),
            StatusCode::kOk);
  EXPECT_EQ((*store_->Get("leader", "berthd"))->body, "other");
  EXPECT_EQ(store_->List("leader")->size(), 1u);
}

TEST_P(StoreContract, EmptyKindOrIdIsInvalid) {
  EXPECT_EQ(store_->Commit({Write::Put("", "x", "b")}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Commit({Write::Put("k", "", "b")}).status().message(),
            "write 0: kind and id must not be empty");
  EXPECT_EQ(store_->revision(), At(0));
}

TEST_P(StoreContract, ConcurrentCreatesOfOneIdHaveOneWinner) {
  std::vector<std::thread> threads;
  std::atomic<int> wins{0}, conflicts{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        Result<int64_t> r =
            store_->Commit({Write::Create("task", "t" + std::to_string(i), std::to_string(t))});
        (r.ok() ? wins : conflicts).fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 25);
  EXPECT_EQ(conflicts.load(), 75);
  EXPECT_EQ(store_->List("task")->size(), 25u);
  EXPECT_EQ(store_->revision(), At(25));
}

// Concurrent commits (which a back end may group into one transaction) each
// get their own revision, one after another, and all are kept.
TEST_P(StoreContract, ConcurrentCommitsGetConsecutiveRevisions) {
  std::mutex mu;
  std::set<int64_t> revisions;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Result<int64_t> r = store_->Commit(
            {Write::Create("task", std::to_string(t) + "-" + std::to_string(i), "x")});
        ASSERT_TRUE(r.ok()) << r.status().message();
        std::lock_guard lock(mu);
        revisions.insert(*r);
      }
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(revisions.size(), 400u);
  EXPECT_EQ(*revisions.begin(), At(1));
  EXPECT_EQ(*revisions.rbegin(), At(400));
  EXPECT_EQ(store_->revision(), At(400));
  EXPECT_EQ(store_->List("task")->size(), 400u);
}

INSTANTIATE_TEST_SUITE_P(
    Every, StoreContract,
    testing::Values(
        Backend{"memory",
                [](const std::string&) { return std::unique_ptr<Store>(new MemoryStore); }},
        Backend{"watched",
                [](const std::string&) {
                  return std::unique_ptr<Store>(new WatchedStore(std::make_unique<MemoryStore>()));
                }},
        Backend{"sqlite",
                [](const std::string& dir) {
                  auto opened = SqliteStore::Open(dir + "/berth.db");
                  EXPECT_TRUE(opened.ok()) << opened.status().message();
                  return std::unique_ptr<Store>(std::move(*opened));
                }},
        Backend{"etcd", [](const std::string&) { return OpenEtcd(); }}),
    [](const testing::TestParamInfo<Backend>& info) { return info.param.name; });

}  // namespace
}  // namespace berth::store
