#include "store/sqlite_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "store/test_dir.h"

namespace berth::store {
namespace {

std::unique_ptr<SqliteStore> OpenOrDie(const std::string& path) {
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().message();
  return store.ok() ? std::move(*store) : nullptr;
}

TEST(SqliteStore, ReopeningKeepsObjectsAndRevision) {
  TestDir dir;
  const std::string path = dir.path() + "/berth.db";
  {
    auto store = OpenOrDie(path);
    ASSERT_TRUE(store->Commit({Write::Put("node", "n1", "one")}).ok());
    ASSERT_TRUE(store->Commit({Write::Put("node", "n2", "two"), Write::Delete("node", "n1")}).ok());
  }
  auto store = OpenOrDie(path);
  EXPECT_EQ(store->revision(), 2);
  std::vector<StoredObject> nodes = *store->List("node");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0], (StoredObject{"node", "n2", "two", 2}));
  EXPECT_EQ(*store->Commit({Write::Put("node", "n3", "three")}), 3);
}

TEST(SqliteStore, ASecondOpenOfAStoreInUseIsRefused) {
  TestDir dir;
  const std::string path = dir.path() + "/berth.db";
  auto first = OpenOrDie(path);
  Result<std::unique_ptr<SqliteStore>> second = SqliteStore::Open(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.status().message(), "store '" + path + "' is in use by another process");
  EXPECT_TRUE(first->Commit({Write::Put("k", "still", "works")}).ok());
}

TEST(SqliteStore, AFileThatIsNotAStoreIsInvalid) {
  TestDir dir;
  const std::string path = dir.path() + "/notes.txt";
  std::ofstream(path)
      << "this is not a database, but it is long enough to have a header page......";
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("not a Berth store"), std::string::npos)
      << store.status().message();
}

TEST(SqliteStore, AnotherSchemaVersionIsRefused) {
  TestDir dir;
  const std::string path = dir.path() + "/berth.db";
  OpenOrDie(path).reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = 7 WHERE key = 'schema_version'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().message(),
            "store '" + path + "' has schema version 7; this berthd reads version 1");
}

TEST(SqliteStore, AMissingDirectoryIsUnavailable) {
  Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open("/nonexistent-berth-dir/berth.db");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable);
}

// A child process commits task t<revision> one by one and reports each
// acknowledged commit on a pipe; the parent kills it with SIGKILL at a random
// point. After each kill the store must hold every acknowledged task, no
// unacknowledged gap, and a revision equal to the number of tasks.
TEST(SqliteStore, EveryAcknowledgedCommitSurvivesSigkill) {
  TestDir dir;
  const std::string path = dir.path() + "/berth.db";
  std::mt19937 rng(20261123);
  int64_t acknowledged = 0;
  for (int round = 0; round < 4; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      Result<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
      if (!store.ok()) _exit(3);
      for (int64_t next = (*store)->revision();; ++next) {
        if (!(*store)->Commit({Write::Create("task", "t" + std::to_string(next), "{}")}).ok())
          _exit(4);
        if (write(fds[1], &next, sizeof next) != sizeof next) _exit(5);
      }
    }
    close(fds[1]);
    const int wanted = std::uniform_int_distribution<int>(5, 60)(rng);
    int64_t last = -1;
    for (int seen = 0; seen < wanted && read(fds[0], &last, sizeof last) == sizeof last; ++seen) {
    }
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    while (read(fds[0], &last, sizeof last) == sizeof last) {
    }  // acknowledgements already in the pipe when it died
    close(fds[0]);
    ASSERT_GE(last, acknowledged);
    acknowledged = last + 1;

    auto store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    std::vector<StoredObject> tasks = *store->List("task");
    EXPECT_GE(static_cast<int64_t>(tasks.size()), acknowledged) << "round " << round;
    EXPECT_EQ(store->revision(), static_cast<int64_t>(tasks.size()));
    for (int64_t i = 0; i < static_cast<int64_t>(tasks.size()); ++i)
      EXPECT_TRUE((*store->Get("task", "t" + std::to_string(i))).has_value()) << "gap at t" << i;
  }
}

}  // namespace
}  // namespace berth::store
