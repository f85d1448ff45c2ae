// WatchedStore's own promise (the Store contract runs in
// store_contract_test.cc): a Watch snapshot plus the changes taken after it
// give exactly the stored state, across concurrent commits.
#include "store/watched_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "store/memory_store.h"

namespace berth::store {
namespace {

TEST(WatchedStore, RecordsOnlyWatchedKindsAndSuccessfulCommits) {
  WatchedStore store(std::make_unique<MemoryStore>());
  ASSERT_TRUE(store.Commit({Write::Put("task", "before", "0")}).ok());
  Result<std::vector<std::vector<StoredObject>>> snapshot = store.Watch({"task", "node"});
  ASSERT_TRUE(snapshot.ok());
  ASSERT_EQ(snapshot->size(), 2u);
  EXPECT_EQ((*snapshot)[0].size(), 1u);
  EXPECT_TRUE((*snapshot)[1].empty());
  ASSERT_TRUE(store.Commit({Write::Put("task", "a", "1"), Write::Put("other", "x", "2")}).ok());
  EXPECT_FALSE(store.Commit({Write::Create("task", "a", "3")}).ok());  // exists: nothing applied
  ASSERT_TRUE(store.Commit({Write::Delete("task", "before")}).ok());
  const std::vector<Change> changes = store.TakeChanges();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].id, "a");
  EXPECT_EQ(changes[0].body, "1");
  EXPECT_EQ(changes[0].revision, 2);
  EXPECT_EQ(changes[1].op, Write::Op::kDelete);
  EXPECT_EQ(changes[1].revision, 3);
  EXPECT_TRUE(store.TakeChanges().empty());  // taken once
}

// The reader's own commits are stored but not handed back to it, and the
// changes after them still come out in order.
TEST(WatchedStore, OwnCommitsAreNotHandedOut) {
  WatchedStore store(std::make_unique<MemoryStore>());
  ASSERT_TRUE(store.Watch({"task"}).ok());
  ASSERT_TRUE(store.Commit({Write::Put("task", "a", "1")}).ok());
  ASSERT_TRUE(store.CommitOwn({Write::Put("task", "mine", "2")}).ok());
  ASSERT_TRUE(store.Commit({Write::Put("task", "b", "3")}).ok());
  const std::vector<Change> changes = store.TakeChanges();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].id, "a");
  EXPECT_EQ(changes[1].id, "b");
  EXPECT_EQ(changes[1].revision, 3);
  Result<std::optional<StoredObject>> mine = store.Get("task", "mine");
  ASSERT_TRUE(mine.ok() && mine->has_value());
  EXPECT_EQ((*mine)->body, "2");
}

// A batch too large for one commit goes in parts, each at its own revision,
// and the reader learns each write's: the highest alone would be wrong for
// the writes of the other parts.
TEST(WatchedStore, ASplitOwnCommitGivesEachWriteItsOwnRevision) {
  WatchedStore store(std::make_unique<MemoryStore>(Store::BatchLimits{2, 0}));
  std::vector<Write> writes;
  for (int i = 0; i < 5; ++i) writes.push_back(Write::Put("task", "t" + std::to_string(i), "x"));
  std::vector<int64_t> revisions = {99};
  Result<int64_t> last = store.CommitOwn(writes, &revisions);
  ASSERT_TRUE(last.ok()) << last.status().message();
  ASSERT_EQ(revisions.size(), writes.size());
  std::set<int64_t> distinct;
  for (size_t i = 0; i < writes.size(); ++i) {
    Result<std::optional<StoredObject>> stored = store.Get("task", writes[i].id);
    ASSERT_TRUE(stored.ok() && stored->has_value());
    EXPECT_EQ(revisions[i], (*stored)->revision) << writes[i].id;
    distinct.insert(revisions[i]);
  }
  EXPECT_EQ(distinct.size(), 3u);  // three parts
  EXPECT_EQ(*last, *distinct.rbegin());
  ASSERT_TRUE(store.CommitOwn({Write::Put("task", "one", "x")}, &revisions).ok());
  EXPECT_TRUE(revisions.empty());  // one part: the returned revision is every write's
}

// A reader that watches while writers commit ends with exactly the store's
// state: no change is lost between the snapshot and the first take.
TEST(WatchedStore, SnapshotAndChangesCoverEveryCommit) {
  WatchedStore store(std::make_unique<MemoryStore>());
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w)
    writers.emplace_back([&, w] {
      for (int i = 0; i < 200; ++i)
        (void)store.Commit(
            {Write::Put("task", "t" + std::to_string(i % 50), std::to_string(w * 1000 + i))});
    });
  std::map<std::string, std::string> seen;
  const auto snapshot = store.Watch({"task"});
  ASSERT_TRUE(snapshot.ok());
  for (const StoredObject& o : (*snapshot)[0]) seen[o.id] = o.body;
  for (auto& t : writers) t.join();
  for (const Change& c : store.TakeChanges()) seen[c.id] = c.body;
  std::map<std::string, std::string> stored;
  const Result<std::vector<StoredObject>> listed = store.List("task");
  ASSERT_TRUE(listed.ok());
  for (const StoredObject& o : *listed) stored[o.id] = o.body;
  EXPECT_EQ(seen, stored);
}

// A MemoryStore whose commits wait while it is closed, and which records
// each batch it was given: shows what group commit sends.
class GatedStore : public Store {
 public:
  explicit GatedStore(BatchLimits limits = {}) : inner_(limits) {}
  Result<int64_t> Commit(const std::vector<Write>& writes) override {
    {
      std::unique_lock lock(mu_);
      ++arrived_;
      changed_.notify_all();
      changed_.wait(lock, [this] { return open_; });
      batches_.push_back(writes);
    }
    return inner_.Commit(writes);
  }
  Result<std::optional<StoredObject>> Get(std::string_view kind,
                                          std::string_view id) const override {
    return inner_.Get(kind, id);
  }
  Result<std::vector<StoredObject>> List(std::string_view kind) const override {
    return inner_.List(kind);
  }
  int64_t revision() const override { return inner_.revision(); }
  BatchLimits batch_limits() const override { return inner_.batch_limits(); }

  void Close() { Set(false); }
  void Open() { Set(true); }
  int arrived() {
    std::lock_guard lock(mu_);
    return arrived_;
  }
  // Waits until `count` commits have arrived (bounded by the test's timeout).
  void WaitArrived(int count) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return arrived_ >= count; });
  }
  std::vector<std::vector<Write>> batches() {
    std::lock_guard lock(mu_);
    return batches_;
  }

 private:
  void Set(bool open) {
    std::lock_guard lock(mu_);
    open_ = open;
    changed_.notify_all();
  }
  MemoryStore inner_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool open_ = true;
  int arrived_ = 0;
  std::vector<std::vector<Write>> batches_;
};

// A GatedStore that is a shared store: WatchedStore takes its changes from
// the feed, which the test hands out (Deliver). As etcd does, a commit that
// writes one object twice brings one change of it, the last write.
class GatedFeed final : public GatedStore, public ChangeFeed {
 public:
  Result<int64_t> Commit(const std::vector<Write>& writes) override {
    Result<int64_t> revision = GatedStore::Commit(writes);
    std::lock_guard lock(log_mu_);
    if (revision.ok()) log_[*revision] = writes;
    return revision;
  }
  Result<int64_t> LatestRevision() override { return revision(); }
  Result<Snapshot> ListAtOneRevision(const std::vector<std::string>& kinds) override {
    Snapshot snapshot{revision(), {}};
    for (const std::string& kind : kinds) {
      Result<std::vector<StoredObject>> listed = List(kind);
      if (!listed.ok()) return listed.status();
      snapshot.kinds.push_back(std::move(*listed));
    }
    return snapshot;
  }
  std::unique_ptr<Following> Follow(int64_t, Sink sink) override {
    sink_ = std::move(sink);
    return std::make_unique<Following>();
  }
  // Hands every commit so far to the follower, in revision order, and
  // waits until `store` has it (the store's SharedFeed passes it on).
  void Deliver(WatchedStore& store) {
    Send();
    ASSERT_TRUE(store.WaitDelivered(revision(), std::chrono::seconds(10)));
  }
  void Send() {
    std::lock_guard lock(log_mu_);
    for (const auto& [revision, writes] : log_) {
      std::map<std::string, Change> last;
      for (const Write& w : writes)
        if (w.op != Write::Op::kCheck)
          last[w.kind + "/" + w.id] = {w.op, w.kind, w.id, w.body, revision};
      std::vector<Change> changes;
      for (auto& [key, change] : last) changes.push_back(std::move(change));
      sink_.changed(revision, std::move(changes));
    }
    log_.clear();
  }

 private:
  std::mutex log_mu_;
  std::map<int64_t, std::vector<Write>> log_;
  Sink sink_;
};

// Commits `batches` from a thread each, queued in order while the store
// holds a first commit, then lets them through; returns each one's answer.
std::vector<Result<int64_t>> CommitTogether(WatchedStore& store, GatedStore& gated,
                                            const std::vector<std::vector<Write>>& batches) {
  gated.Close();
  std::thread first([&] { ASSERT_TRUE(store.Commit({Write::Put("task", "first", "0")}).ok()); });
  gated.WaitArrived(1);
  std::vector<Result<int64_t>> answers(batches.size(), Status::Unavailable("not answered"));
  std::vector<std::thread> callers;
  for (size_t i = 0; i < batches.size(); ++i) {  // queued in this order
    callers.emplace_back([&, i] { answers[i] = store.Commit(batches[i]); });
    while (store.queued() < i + 1) std::this_thread::yield();
  }
  gated.Open();
  first.join();
  for (std::thread& t : callers) t.join();
  return answers;
}

// Batches queued while a commit is in flight go to the store as one batch,
// fenced once, and each caller gets the group's revision; the changes of
// every batch are handed out.
TEST(WatchedStoreGroupCommit, BatchesQueuedTogetherShareOneCommit) {
  auto gated = std::make_shared<GatedStore>();
  WatchedStore store(gated, 1);
  store.SetFence([] { return std::vector<Write>{Write::Check("leader", "l", 0)}; });
  ASSERT_TRUE(store.Watch({"task"}).ok());
  const std::vector<Result<int64_t>> answers =
      CommitTogether(store, *gated,
                     {{Write::Create("task", "a", "1")},
                      {Write::Create("task", "b", "2"), Write::Put("other", "x", "3")},
                      {Write::Create("task", "c", "4")}});
  for (const Result<int64_t>& answer : answers) {
    ASSERT_TRUE(answer.ok()) << answer.status().message();
    EXPECT_EQ(*answer, 2);  // the first commit was revision 1
  }
  const std::vector<std::vector<Write>> sent = gated->batches();
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_EQ(sent[1].size(), 5u);  // one fence and the four writes
  EXPECT_EQ(sent[1][0].op, Write::Op::kCheck);
  EXPECT_EQ(std::count_if(sent[1].begin(), sent[1].end(),
                          [](const Write& w) { return w.op == Write::Op::kCheck; }),
            1);
  EXPECT_EQ(store.groups_committed(), 2u);
  EXPECT_EQ(store.batches_committed(), 4u);
  std::vector<std::string> changed;
  for (const Change& c : store.TakeChanges())
    changed.push_back(c.id + "@" + std::to_string(c.revision));
  EXPECT_EQ(changed, (std::vector<std::string>{"first@1", "a@2", "b@2", "c@2"}));
}

// One batch's failed precondition refuses the group; it is committed again
// in halves, down to single batches, so only that one is refused, with its
// own reason, and a later batch still sees an earlier one's write.
TEST(WatchedStoreGroupCommit, ARefusedBatchFailsAloneAndTheOthersApply) {
  auto gated = std::make_shared<GatedStore>();
  WatchedStore store(gated, 1);
  const std::vector<Result<int64_t>> answers = CommitTogether(
      store, *gated,
      {{Write::Create("task", "a", "1")},
       {Write::Create("task", "first", "again")},     // exists: refused
       {Write::Put("task", "a", "2").IfRevision(2)},  // a's revision once committed alone
       {Write{Write::Op::kPut, "", "no kind", "", Write::Expect::kAnything, 0}}});
  ASSERT_TRUE(answers[0].ok());
  EXPECT_EQ(answers[1].status().code(), StatusCode::kConflict);
  EXPECT_NE(answers[1].status().message().find("'first' already exists"), std::string::npos);
  ASSERT_TRUE(answers[2].ok()) << answers[2].status().message();
  EXPECT_EQ(answers[3].status().code(), StatusCode::kInvalidArgument);
  Result<std::optional<StoredObject>> a = store.Get("task", "a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->body, "2");
  Result<std::optional<StoredObject>> first = store.Get("task", "first");
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->body, "0");
  // The first commit, the refused group, its refused halves and then
  // each of their batches.
  EXPECT_EQ(store.groups_committed(), 8u);
  EXPECT_EQ(store.batches_committed(), 5u);
}

// A group takes only what one commit of the store may hold: the rest waits
// for the next group, in order.
TEST(WatchedStoreGroupCommit, AGroupKeepsWithinTheStoresLimits) {
  auto gated = std::make_shared<GatedStore>(Store::BatchLimits{5, 0});
  WatchedStore store(gated, 1);
  const std::vector<Write> three = {Write::Put("task", "x1", "1"), Write::Put("task", "x2", "2"),
                                    Write::Put("task", "x3", "3")};
  const std::vector<Write> two = {Write::Put("task", "y1", "1"), Write::Put("task", "y2", "2")};
  const std::vector<Result<int64_t>> answers = CommitTogether(store, *gated, {three, two, three});
  for (const Result<int64_t>& answer : answers) ASSERT_TRUE(answer.ok());
  std::vector<size_t> sizes;
  for (const std::vector<Write>& batch : gated->batches()) sizes.push_back(batch.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 5, 3}));
  EXPECT_EQ(*answers[0], *answers[1]);
  EXPECT_LT(*answers[1], *answers[2]);
}

// The changes TakeChanges hands out, as "id=body@revision".
std::vector<std::string> Taken(WatchedStore& store) {
  std::vector<std::string> taken;
  for (const Change& c : store.TakeChanges())
    taken.push_back(c.id + "=" + c.body + "@" + std::to_string(c.revision));
  return taken;
}

// Queues an API batch, then the reader's own, while a first commit is held
// in the store; returns both answers once the store lets them through.
std::pair<Result<int64_t>, Result<int64_t>> ApiThenOwn(WatchedStore& store, GatedFeed& feed,
                                                       const std::vector<Write>& api,
                                                       const std::vector<Write>& own) {
  feed.Close();
  const int before = feed.arrived();
  std::thread first([&] { ASSERT_TRUE(store.Commit({Write::Put("task", "first", "0")}).ok()); });
  feed.WaitArrived(before + 1);
  Result<int64_t> api_answer = Status::Unavailable("not answered"), own_answer = api_answer;
  std::thread request([&] { api_answer = store.Commit(api); });
  while (store.queued() < 1) std::this_thread::yield();
  std::thread pass([&] { own_answer = store.CommitOwn(own); });
  // Bounded: a pass that does not queue goes to the store and waits there.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (store.queued() < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  feed.Open();
  for (std::thread* t : {&first, &request, &pass}) t->join();
  return {api_answer, own_answer};
}

// On a shared store, a pass small enough for one commit (CommitOwn) joins
// the API's group, ahead of the API's batches, instead of taking a
// transaction of its own; the reader is handed the group's other writes but
// not its own.
TEST(WatchedStoreGroupCommit, TheReadersSmallCommitGoesFirstInAGroupAndIsNotHandedBack) {
  auto feed = std::make_shared<GatedFeed>();
  WatchedStore store(feed, 1);
  store.SetFence([] { return std::vector<Write>{Write::Check("leader", "l", 0)}; });
  ASSERT_TRUE(store.Watch({"task"}).ok());
  const auto [api, own] =
      ApiThenOwn(store, *feed, {Write::Create("task", "api", "1")},
                 {Write::Put("task", "placed", "2"), Write::Delete("task", "first")});
  ASSERT_TRUE(api.ok()) << api.status().message();
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(*own, *api);  // one transaction
  const std::vector<std::vector<Write>> sent = feed->batches();
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_EQ(sent[1].size(), 4u);  // the fence, the pass's two writes, the request's
  EXPECT_EQ(sent[1][1].id, "placed");
  EXPECT_EQ(sent[1][3].id, "api");
  EXPECT_EQ(store.groups_committed(), 2u);
  EXPECT_EQ(store.batches_committed(), 2u);  // API batches: the pass's is not one
  feed->Deliver(store);
  EXPECT_EQ(Taken(store), (std::vector<std::string>{"first=0@1", "api=1@2"}));
}

// An API write to an object the pass also writes does not share the pass's
// transaction (the store would keep the API's write at the revision the
// reader records for its own): it goes in the next, and the reader is handed
// it. A write to another object still joins.
TEST(WatchedStoreGroupCommit, AnApiWriteToTheReadersObjectWaitsForTheNextCommit) {
  auto feed = std::make_shared<GatedFeed>();
  WatchedStore store(feed, 1);
  store.SetFence([] { return std::vector<Write>{Write::Check("leader", "l", 0)}; });
  ASSERT_TRUE(store.Watch({"task"}).ok());
  const auto [api, own] =
      ApiThenOwn(store, *feed, {Write::Put("task", "x", "api")},
                 {Write::Put("task", "x", "pass"), Write::Put("task", "y", "pass")});
  ASSERT_TRUE(api.ok() && own.ok());
  EXPECT_EQ(*own, 2);
  EXPECT_EQ(*api, 3);
  feed->Deliver(store);
  EXPECT_EQ(Taken(store), (std::vector<std::string>{"first=0@1", "x=api@3"}));
  Result<std::optional<StoredObject>> x = store.Get("task", "x");
  ASSERT_TRUE(x.ok() && x->has_value());
  EXPECT_EQ((*x)->body, "api");
}

// The reader's batch refused in a group (its precondition failed) is
// refused alone: the API's batches still apply.
TEST(WatchedStoreGroupCommit, TheReadersRefusedBatchFailsAloneInAGroup) {
  auto feed = std::make_shared<GatedFeed>();
  ASSERT_TRUE(feed->Commit({Write::Put("leader", "l", "me")}).ok());  // the fence holds
  WatchedStore store(feed, 1);
  store.SetFence([] { return std::vector<Write>{Write::Check("leader", "l", 1)}; });
  ASSERT_TRUE(store.Watch({"task"}).ok());
  Write stale = Write::Put("task", "first", "pass");
  stale.IfRevision(7);
  const auto [api, own] = ApiThenOwn(store, *feed, {Write::Create("task", "api", "1")}, {stale});
  ASSERT_TRUE(api.ok()) << api.status().message();
  EXPECT_EQ(own.status().code(), StatusCode::kConflict);
  feed->Deliver(store);
  EXPECT_EQ(Taken(store), (std::vector<std::string>{"first=0@2", "api=1@3"}));
}

// A local store gives the reader's commits no group: SQLite groups its own.
TEST(WatchedStoreGroupCommit, ALocalStoresReaderCommitsAlone) {
  auto gated = std::make_shared<GatedStore>();
  WatchedStore store(gated, 1);
  store.SetFence([] { return std::vector<Write>{Write::Check("leader", "l", 0)}; });
  ASSERT_TRUE(store.Watch({"task"}).ok());
  ASSERT_TRUE(store.CommitOwn({Write::Put("task", "mine", "1")}).ok());
  EXPECT_EQ(store.groups_committed(), 0u);
  EXPECT_TRUE(store.TakeChanges().empty());
}

// Many writers at once, some of them racing for the same names: every
// caller's answer is what committing alone would have said.
TEST(WatchedStoreGroupCommit, ConcurrentWritersGetTheirOwnAnswers) {
  WatchedStore store(std::make_shared<MemoryStore>(), 1);
  std::atomic<int> created{0}, refused{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w)
    writers.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        Result<int64_t> answer = store.Commit({Write::Create("task", "t" + std::to_string(i), "")});
        if (answer.ok()) {
          ++created;
        } else {
          ++refused;
          EXPECT_EQ(answer.status().code(), StatusCode::kConflict);
        }
      }
    });
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(created.load(), 100);
  EXPECT_EQ(refused.load(), 700);
  Result<std::vector<StoredObject>> listed = store.List("task");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 100u);
}

}  // namespace
}  // namespace berth::store
