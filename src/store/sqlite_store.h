// SqliteStore: the embedded default Store, one SQLite database file in WAL
// mode (docs/berthd.md, "What it does": Store). Each Commit is one
// transaction with synchronous=FULL, so an acknowledged batch survives a crash
// of the process or of the machine.
//
// The database is opened in exclusive locking mode: while one SqliteStore
// holds a file, a second one (another berthd on the same data directory)
// fails to open with Unavailable instead of interleaving writes.
//
// Schema (version 1):
//   meta(key TEXT PRIMARY KEY, value INTEGER)   -- schema_version, revision
//   objects(kind, id, revision, body, PRIMARY KEY(kind, id)) WITHOUT ROWID
//
// Commits from concurrent callers are grouped: one transaction, and so one
// fsync, acknowledges every batch queued while the previous group was being
// written (each batch keeps its own preconditions and revision).
//
// The WAL is copied back into the database file (a checkpoint) by a thread
// of the store once it holds kCheckpointPages pages, not inside the commit
// that filled it: a commit of 100,000 tasks then costs its own write only.
// A new database uses 16 KiB pages (an existing one keeps its own); both
// measured in docs/benchmarks.md.
//
// Thread-safe: one connection behind a mutex.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

struct sqlite3;

namespace berth::store {

class SqliteStore final : public Store {
 public:
  // Opens or creates the database at `path` (its directory must exist).
  // InvalidArgument: the file is not a Berth store (not SQLite, or another
  // schema version). Unavailable: it cannot be opened or is in use.
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Result<int64_t> Commit(const std::vector<Write>& writes) override;
  Result<std::optional<StoredObject>> Get(std::string_view kind,
                                          std::string_view id) const override;
  Result<std::vector<StoredObject>> List(std::string_view kind) const override;
  Result<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                               std::string_view prefix) const override;
  int64_t revision() const override;

  // SQLite's own default for its automatic checkpoint.
  static constexpr int kCheckpointPages = 1000;
  // Creations written by one INSERT statement (CommitLocked).
  static constexpr size_t kRowsPerInsert = 32;

 private:
  SqliteStore(sqlite3* db, std::string path, int64_t revision);
  Status Init();
  struct Queued {
    const std::vector<Write>* writes;
    Result<int64_t> result;
    bool done;
  };
  void CommitGroup(const std::vector<Queued*>& group);
  Status CommitLocked(const std::vector<Write>& writes, int64_t next);
  Status WriteOne(const Write& write, int64_t next);
  Status Error(const std::string& doing) const;
  // sqlite3_wal_hook: after each commit, with the WAL's size in pages.
  static int OnWalCommit(void* store, sqlite3* db, const char* name, int pages);
  void Checkpoints();  // the checkpoint thread

  std::mutex queue_mu_;  // guards queue_ and leading_
  std::condition_variable committed_;
  std::vector<Queued*> queue_;
  bool leading_ = false;
  mutable std::mutex mu_;  // guards the connection, its statements and revision_
  sqlite3* db_;
  struct Statements;
  std::unique_ptr<Statements> statements_;  // prepared by Init
  std::string path_;
  int64_t revision_;
  std::mutex checkpoint_mu_;  // guards checkpoint_due_ and stopping_
  std::condition_variable checkpoint_cv_;
  bool checkpoint_due_ = false, stopping_ = false;
  std::thread checkpointer_;
};

}  // namespace berth::store
