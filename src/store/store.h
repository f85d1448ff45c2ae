// Store: the durable state of berthd (docs/architecture.md, "src/store"). One
// interface; the embedded default is SQLite (sqlite_store.h), MemoryStore
// (memory_store.h) serves tests and dry runs.
//
// The model is deliberately small so that other back ends (etcd) fit it: a
// set of objects, each named by (kind, id), holding an opaque body (the API
// codecs' JSON) and the store revision of its last write. Commit applies a
// batch of writes atomically; the store revision grows with every successful
// Commit that writes (by one, where this process is the only writer; a
// shared store such as etcd also counts the others' commits, and
// WatchedStore may commit concurrent batches on it together, at one
// revision). A write may
// carry a precondition (the object must be absent, or be at a given
// revision); if any precondition fails, Commit applies nothing and returns a
// Conflict naming the object. A Check is a precondition alone: a leader
// fences its writes with one on its leadership key (docs/ha.md).
//
// A back end may take only so many writes in one Commit (batch_limits:
// etcd's --max-txn-ops and --max-request-bytes); a larger batch is refused
// whole with InvalidArgument.
//
// Durability: when Commit returns OK, the batch survives a crash of the
// process (and, for SqliteStore, of the machine). Callers acknowledge a
// request only after its Commit returned OK.
//
// Thread-safe: every method may be called from any thread; commits are
// serialised.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace berth::store {

struct StoredObject {
  std::string kind, id;
  std::string body;
  int64_t revision = 0;  // store revision of the write that last set it
  bool operator==(const StoredObject&) const = default;
};

struct Write {
  enum class Op { kPut, kDelete, kCheck };  // kCheck: the precondition only
  enum class Expect { kAnything, kAbsent, kRevision };
  Op op = Op::kPut;
  std::string kind, id, body;  // body: kPut only
  Expect expect = Expect::kAnything;
  int64_t expected_revision = 0;  // Expect::kRevision only

  static Write Put(std::string kind, std::string id, std::string body) {
    return {Op::kPut, std::move(kind), std::move(id), std::move(body), Expect::kAnything, 0};
  }
  static Write Create(std::string kind, std::string id, std::string body) {
    return {Op::kPut, std::move(kind), std::move(id), std::move(body), Expect::kAbsent, 0};
  }
  static Write Delete(std::string kind, std::string id) {
    return {Op::kDelete, std::move(kind), std::move(id), "", Expect::kAnything, 0};
  }
  // Writes nothing; the batch applies only if the object is at `revision`
  // (0: absent).
  static Write Check(std::string kind, std::string id, int64_t revision) {
    Write check{Op::kCheck, std::move(kind), std::move(id), "", Expect::kAnything, 0};
    check.IfRevision(revision);
    return check;
  }
  // Sets the precondition "the object is at `revision`" (0: absent).
  Write& IfRevision(int64_t revision) {
    expect = revision == 0 ? Expect::kAbsent : Expect::kRevision;
    expected_revision = revision;
    return *this;
  }
};

class Store {
 public:
  virtual ~Store() = default;

  // Applies `writes` in order, atomically and durably; returns the new store
  // revision (an empty batch changes nothing and returns the current one).
  // Conflict: a precondition failed (nothing applied).
  // InvalidArgument: an empty kind or id. Unavailable/Internal: the back end
  // failed (nothing applied).
  virtual Result<int64_t> Commit(const std::vector<Write>& writes) = 0;

  // The object, or nullopt when absent.
  virtual Result<std::optional<StoredObject>> Get(std::string_view kind,
                                                  std::string_view id) const = 0;

  // Every object of `kind`, ordered by id (bytewise).
  virtual Result<std::vector<StoredObject>> List(std::string_view kind) const = 0;
  // The objects of `kind` whose id starts with `prefix`, ordered by id: a
  // range read (one service's tasks, one slot's). This default filters
  // List; the back ends read only the range.
  virtual Result<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                                       std::string_view prefix) const;

  // The revision of the last successful Commit (0 for a new store; for a
  // shared store, the latest revision this process has seen).
  virtual int64_t revision() const = 0;

  // How many writes, and bytes of kinds, ids and bodies, one Commit takes
  // (0: no limit).
  struct BatchLimits {
    size_t writes = 0;
    size_t bytes = 0;
  };
  virtual BatchLimits batch_limits() const { return {}; }
  // Splits `writes` into parts that one Commit each takes with `prefix` (a
  // leader's fence) before them: each part lists indices into `writes`,
  // ascending; every index is in one part. This default counts writes and
  // bytes against batch_limits() in order (SplitIndices); a back end that
  // stores several objects in one record keeps a record's writes together
  // and counts what it really sends. Parts commit independently, so a
  // caller gives no object two writes.
  virtual std::vector<std::vector<size_t>> PartsForCommit(const std::vector<Write>& writes,
                                                          const std::vector<Write>& prefix) const;
};

// What `write` counts for against BatchLimits::bytes: its kind, id and body.
inline size_t WriteBytes(const Write& write) {
  return write.kind.size() + write.id.size() + write.body.size();
}

// Splits `writes` into batches within `limits`, each starting with `prefix`
// (a leader's fence), in order; one batch when there is no limit.
// SplitIndices gives each batch's indices into `writes`; Gather makes a
// batch of them.
std::vector<std::vector<size_t>> SplitIndices(const std::vector<Write>& writes,
                                              const Store::BatchLimits& limits,
                                              const std::vector<Write>& prefix = {});
std::vector<Write> Gather(const std::vector<Write>& writes, const std::vector<size_t>& indices,
                          const std::vector<Write>& prefix);
std::vector<std::vector<Write>> SplitBatch(const std::vector<Write>& writes,
                                           const Store::BatchLimits& limits,
                                           const std::vector<Write>& prefix = {});

// Checks the shape of a batch (non-empty kind and id); shared by back ends.
Status ValidateWrites(const std::vector<Write>& writes);

// Whether `write`'s precondition holds on an object at `actual_revision`
// (0: absent); shared by back ends.
bool PreconditionHolds(const Write& write, int64_t actual_revision);

// The Conflict status for a failed precondition, worded the same by every
// back end.
Status PreconditionFailed(const Write& write, int64_t actual_revision);

}  // namespace berth::store
