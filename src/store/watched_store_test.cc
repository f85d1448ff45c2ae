// WatchedStore's own promise (the Store contract runs in
// store_contract_test.cc): a Watch snapshot plus the changes taken after it
// give exactly the stored state, across concurrent commits.
#include "store/watched_store.h"

#include <gtest/gtest.h>

#include <map>
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

}  // namespace
}  // namespace berth::store
