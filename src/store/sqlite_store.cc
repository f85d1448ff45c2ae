#include "store/sqlite_store.h"

#include <pthread.h>
#include <sqlite3.h>

#include <algorithm>
#include <string>

namespace berth::store {
namespace {

constexpr int64_t kSchemaVersion = 1;

// One prepared statement; finalized on destruction.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  Statement& Bind(int index, std::string_view text) {
    // SQLITE_STATIC: callers keep `text` alive until Reset.
    sqlite3_bind_blob(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& Bind(int index, int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string Text(int column) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    return data ? std::string(static_cast<const char*>(data),
                              static_cast<size_t>(sqlite3_column_bytes(stmt_, column)))
                : std::string();
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

// Appends the (id, revision, body) rows of a bound listing statement to
// `out` and resets it; the last step's result (SQLITE_DONE: all read).
int ReadRows(Statement& select, std::string_view kind, std::vector<StoredObject>* out) {
  int rc;
  while ((rc = select.Step()) == SQLITE_ROW)
    out->push_back({std::string(kind), select.Text(0), select.Text(2), select.Int(1)});
  select.Reset();
  return rc;
}

bool Exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

// INSERT of kRowsPerInsert objects: (?1, ?2, ?3, ?4), (?5, ...), ...
std::string InsertRowsSql() {
  std::string sql = "INSERT INTO objects(kind, id, revision, body) VALUES";
  for (size_t r = 0; r < SqliteStore::kRowsPerInsert; ++r) {
    sql += r == 0 ? "(" : ",(";
    for (size_t c = 1; c <= 4; ++c) sql += "?" + std::to_string(4 * r + c) + (c < 4 ? "," : ")");
  }
  return sql;
}

// Runs a statement that returns no rows.
bool Run(Statement& statement) {
  const int rc = statement.Step();
  statement.Reset();
  return rc == SQLITE_DONE;
}

}  // namespace

// Every statement the store runs after Init, prepared once: preparing them
// for each batch cost more than a small batch's writes. Used under mu_;
// each use ends with Reset.
struct SqliteStore::Statements {
  explicit Statements(sqlite3* db)
      : begin(db, "BEGIN IMMEDIATE"),
        commit(db, "COMMIT"),
        rollback(db, "ROLLBACK"),
        savepoint(db, "SAVEPOINT batch"),
        rollback_to(db, "ROLLBACK TO batch"),
        release(db, "RELEASE batch"),
        revision_of(db, "SELECT revision FROM objects WHERE kind = ?1 AND id = ?2"),
        insert(db, "INSERT INTO objects(kind, id, revision, body) VALUES(?1, ?2, ?3, ?4)"),
        insert_rows(db, InsertRowsSql().c_str()),
        upsert(db,
               "INSERT INTO objects(kind, id, revision, body) VALUES(?1, ?2, ?3, ?4) "
               "ON CONFLICT(kind, id) DO UPDATE SET revision = excluded.revision, "
               "body = excluded.body"),
        update(db,
               "UPDATE objects SET revision = ?3, body = ?4 "
               "WHERE kind = ?1 AND id = ?2 AND revision = ?5"),
        remove(db, "DELETE FROM objects WHERE kind = ?1 AND id = ?2"),
        remove_at(db, "DELETE FROM objects WHERE kind = ?1 AND id = ?2 AND revision = ?3"),
        bump(db, "UPDATE meta SET value = ?1 WHERE key = 'revision'"),
        get(db, "SELECT revision, body FROM objects WHERE kind = ?1 AND id = ?2"),
        list(db, "SELECT id, revision, body FROM objects WHERE kind = ?1 ORDER BY id"),
        // Ids are blobs, compared bytewise: every id with the prefix sorts
        // below prefix + 0xFF, a byte UTF-8 never holds.
        list_prefix(db,
                    "SELECT id, revision, body FROM objects WHERE kind = ?1 AND id >= ?2 AND "
                    "id < ?3 ORDER BY id") {}

  bool prepared() const {
    for (const Statement* s :
         {&begin, &commit, &rollback, &savepoint, &rollback_to, &release, &revision_of, &insert,
          &upsert, &update, &remove, &remove_at, &bump, &get, &list, &list_prefix})
      if (!s->prepared()) return false;
    return true;
  }

  Statement begin, commit, rollback, savepoint, rollback_to, release;
  Statement revision_of, insert, insert_rows, upsert, update, remove, remove_at, bump;
  Statement get, list, list_prefix;
};

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Unavailable("cannot open store '" + path + "': " + message);
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(db, path, 0));
  BERTH_RETURN_IF_ERROR(store->Init());
  return store;
}

SqliteStore::SqliteStore(sqlite3* db, std::string path, int64_t revision)
    : db_(db), path_(std::move(path)), revision_(revision) {}

SqliteStore::~SqliteStore() {
  {
    std::lock_guard lock(checkpoint_mu_);
    stopping_ = true;
  }
  checkpoint_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  statements_.reset();  // finalized before the connection closes
  sqlite3_close(db_);
}

// Called inside COMMIT, with mu_ held: only flags the thread.
int SqliteStore::OnWalCommit(void* store, sqlite3*, const char*, int pages) {
  auto* self = static_cast<SqliteStore*>(store);
  if (pages >= kCheckpointPages) {
    {
      std::lock_guard lock(self->checkpoint_mu_);
      self->checkpoint_due_ = true;
    }
    self->checkpoint_cv_.notify_all();
  }
  return SQLITE_OK;
}

// A passive checkpoint between commits; a failed one is tried again after
// the next commit (the WAL only grows meanwhile).
void SqliteStore::Checkpoints() {
  std::unique_lock lock(checkpoint_mu_);
  for (;;) {
    checkpoint_cv_.wait(lock, [&] { return checkpoint_due_ || stopping_; });
    if (stopping_) return;
    checkpoint_due_ = false;
    lock.unlock();
    {
      std::lock_guard db_lock(mu_);
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    }
    lock.lock();
  }
}

Status SqliteStore::Error(const std::string& doing) const {
  const int code = sqlite3_errcode(db_);
  const std::string message = "store '" + path_ + "': " + doing + ": " + sqlite3_errmsg(db_);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    return Status::Unavailable("store '" + path_ + "' is in use by another process");
  if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
    return Status::InvalidArgument(message + " (not a Berth store)");
  return Status::Unavailable(message);
}

// Takes the exclusive lock, creates the schema on first use, checks its
// version and reads the revision.
Status SqliteStore::Init() {
  sqlite3_busy_timeout(db_, 0);  // a store in use fails at once
  // page_size applies to a new file only, before it turns to WAL.
  if (!Exec(db_, "PRAGMA page_size=16384") || !Exec(db_, "PRAGMA locking_mode=EXCLUSIVE") ||
      !Exec(db_, "PRAGMA journal_mode=WAL") || !Exec(db_, "PRAGMA synchronous=FULL") ||
      !Exec(db_, "PRAGMA cache_size=-65536") || !Exec(db_, "PRAGMA wal_autocheckpoint=0"))
    return Error("configuring");
  if (!Exec(db_, "BEGIN EXCLUSIVE")) return Error("locking");
  const bool created =
      Exec(db_, "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL)") &&
      Exec(db_,
           "CREATE TABLE IF NOT EXISTS objects(kind BLOB NOT NULL, id BLOB NOT NULL, "
           "revision INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY(kind, id)) WITHOUT ROWID") &&
      Exec(db_, "INSERT OR IGNORE INTO meta VALUES('schema_version', 1), ('revision', 0)");
  if (!created) {
    Status status = Error("creating the schema");
    Exec(db_, "ROLLBACK");
    return status;
  }
  Statement read(db_, "SELECT key, value FROM meta");
  int64_t version = 0;
  while (read.prepared() && read.Step() == SQLITE_ROW) {
    const std::string key = read.Text(0);
    if (key == "schema_version") version = read.Int(1);
    if (key == "revision") revision_ = read.Int(1);
  }
  if (!Exec(db_, "COMMIT")) return Error("reading the schema");
  if (version != kSchemaVersion)
    return Status::InvalidArgument("store '" + path_ + "' has schema version " +
                                   std::to_string(version) + "; this berthd reads version " +
                                   std::to_string(kSchemaVersion));
  statements_ = std::make_unique<Statements>(db_);
  if (!statements_->prepared()) return Error("preparing statements");
  sqlite3_wal_hook(db_, &SqliteStore::OnWalCommit, this);
  checkpointer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "berth-ckpt");  // for top -H and perf
    Checkpoints();
  });
  return Status::Ok();
}

// Group commit: a caller queues its batch; whoever finds no group in
// progress leads one, committing every queued batch in one transaction (one
// fsync) and then waking their callers. Each batch runs in its own savepoint,
// so a failed precondition undoes only that batch, and gets its own revision.
Result<int64_t> SqliteStore::Commit(const std::vector<Write>& writes) {
  BERTH_RETURN_IF_ERROR(ValidateWrites(writes));
  if (writes.empty()) return revision();
  Queued mine{&writes, Status::Unavailable("not committed"), false};
  std::unique_lock lock(queue_mu_);
  queue_.push_back(&mine);
  while (!mine.done) {
    if (leading_) {
      committed_.wait(lock);
      continue;
    }
    leading_ = true;
    std::vector<Queued*> group = std::exchange(queue_, {});
    lock.unlock();
    CommitGroup(group);
    lock.lock();
    leading_ = false;
    for (Queued* q : group) q->done = true;
    committed_.notify_all();
  }
  return std::move(mine.result);
}

void SqliteStore::CommitGroup(const std::vector<Queued*>& group) {
  std::lock_guard lock(mu_);
  Statements& st = *statements_;
  if (!Run(st.begin)) {
    for (Queued* q : group) q->result = Error("starting a transaction");
    return;
  }
  int64_t next = revision_;
  for (Queued* q : group) {
    Run(st.savepoint);
    const Status status = CommitLocked(*q->writes, next + 1);
    if (status.ok()) {
      q->result = ++next;
    } else {
      q->result = status;
      Run(st.rollback_to);
    }
    Run(st.release);
  }
  if (!Run(st.commit)) {
    const Status error = Error("committing");
    Run(st.rollback);
    for (Queued* q : group)
      if (q->result.ok()) q->result = error;
    return;
  }
  revision_ = next;
}

// The body of one Commit transaction. Each write is one statement that
// carries its own precondition (an INSERT that must not collide, an UPDATE
// or DELETE at the expected revision), so a write costs one B-tree visit;
// the current revision is read only to explain a refusal. Preconditions see
// the batch's earlier writes. Creations (kAbsent puts) in runs of
// kRowsPerInsert share one INSERT statement: a statement per row cost more
// in statement setup than its insert. Such a statement that collides
// changes nothing, and its rows are then written one by one to name the
// write that collided.
Status SqliteStore::CommitLocked(const std::vector<Write>& writes, int64_t next) {
  auto creation = [](const Write& w) {
    return w.op == Write::Op::kPut && w.expect == Write::Expect::kAbsent;
  };
  for (size_t i = 0; i < writes.size();) {
    const size_t end = i + kRowsPerInsert;
    if (end <= writes.size() &&
        std::all_of(writes.begin() + static_cast<std::ptrdiff_t>(i),
                    writes.begin() + static_cast<std::ptrdiff_t>(end), creation)) {
      Statement& insert = statements_->insert_rows;
      for (size_t r = 0; r < kRowsPerInsert; ++r) {
        const Write& w = writes[i + r];
        const int column = static_cast<int>(4 * r);
        insert.Bind(column + 1, w.kind).Bind(column + 2, w.id).Bind(column + 3, next);
        insert.Bind(column + 4, w.body);
      }
      const int rc = insert.Step();
      insert.Reset();
      if (rc == SQLITE_DONE) {
        i = end;
        continue;
      }
      if ((rc & 0xff) != SQLITE_CONSTRAINT)
        return Error("writing " + std::to_string(kRowsPerInsert) + " objects");
      for (; i < end; ++i) BERTH_RETURN_IF_ERROR(WriteOne(writes[i], next));
      continue;
    }
    BERTH_RETURN_IF_ERROR(WriteOne(writes[i++], next));
  }
  Statement& bump = statements_->bump;
  bump.Bind(1, next);
  if (!Run(bump)) return Error("writing the revision");
  return Status::Ok();
}

// One write, with its precondition, as one statement.
Status SqliteStore::WriteOne(const Write& w, int64_t next) {
  Statements& st = *statements_;
  auto current = [&]() -> Result<int64_t> {
    Statement& select = st.revision_of;
    select.Bind(1, w.kind).Bind(2, w.id);
    const int rc = select.Step();
    const int64_t revision = rc == SQLITE_ROW ? select.Int(0) : 0;
    select.Reset();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      return Error("reading " + w.kind + " '" + w.id + "'");
    return revision;
  };
  const bool put = w.op == Write::Op::kPut;
  // A check, or deleting what must not exist: a read only.
  if (w.op == Write::Op::kCheck || (!put && w.expect == Write::Expect::kAbsent)) {
    Result<int64_t> revision = current();
    if (!revision.ok()) return revision.status();
    if (!PreconditionHolds(w, *revision)) return PreconditionFailed(w, *revision);
    return Status::Ok();
  }
  Statement& change = put ? (w.expect == Write::Expect::kAbsent     ? st.insert
                             : w.expect == Write::Expect::kRevision ? st.update
                                                                    : st.upsert)
                          : (w.expect == Write::Expect::kRevision ? st.remove_at : st.remove);
  change.Bind(1, w.kind).Bind(2, w.id);
  if (put) change.Bind(3, next).Bind(4, w.body);
  if (w.expect == Write::Expect::kRevision) change.Bind(put ? 5 : 3, w.expected_revision);
  const int rc = change.Step();
  const bool missed =
      rc == SQLITE_DONE && w.expect == Write::Expect::kRevision && sqlite3_changes(db_) == 0;
  change.Reset();
  if ((rc & 0xff) == SQLITE_CONSTRAINT || missed) {
    Result<int64_t> revision = current();
    if (!revision.ok()) return revision.status();
    return PreconditionFailed(w, *revision);
  }
  if (rc != SQLITE_DONE) return Error("writing " + w.kind + " '" + w.id + "'");
  return Status::Ok();
}

Result<std::optional<StoredObject>> SqliteStore::Get(std::string_view kind,
                                                     std::string_view id) const {
  std::lock_guard lock(mu_);
  Statement& select = statements_->get;
  select.Bind(1, kind).Bind(2, id);
  const int rc = select.Step();
  std::optional<StoredObject> found;
  if (rc == SQLITE_ROW)
    found = StoredObject{std::string(kind), std::string(id), select.Text(1), select.Int(0)};
  select.Reset();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Error("reading");
  return found;
}

Result<std::vector<StoredObject>> SqliteStore::List(std::string_view kind) const {
  std::lock_guard lock(mu_);
  Statement& select = statements_->list;
  select.Bind(1, kind);
  std::vector<StoredObject> out;
  if (ReadRows(select, kind, &out) != SQLITE_DONE) return Error("listing");
  return out;
}

Result<std::vector<StoredObject>> SqliteStore::ListPrefix(std::string_view kind,
                                                          std::string_view prefix) const {
  std::lock_guard lock(mu_);
  Statement& select = statements_->list_prefix;
  const std::string end = std::string(prefix) + '\xff';
  select.Bind(1, kind).Bind(2, prefix).Bind(3, end);
  std::vector<StoredObject> out;
  if (ReadRows(select, kind, &out) != SQLITE_DONE) return Error("listing");
  return out;
}

int64_t SqliteStore::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

}  // namespace berth::store
