// Task blocks: how EtcdStore keeps the objects of a packed kind (tasks)
// several to an etcd key, while every object keeps its own body and
// revision (docs/ha.md, "Tasks in blocks").
//
// Why: etcd's cost is per key (some 45 µs of its CPU a key on the
// benchmark machine, docs/benchmarks.md), and a service of 100,000
// replicas is 100,000 keys written twice (assigned, then running). In
// blocks of 16 it is 6,250 keys.
//
// Which block: a task id "<owner>.<rest>" (a service's "web.12" or
// "web.12.3", a job's "build.12") goes to block "<owner>.<n / 16>" when
// <rest> starts with a number n, else to "<owner>.h<hash of rest, 0-1023>"
// (a global service's "web.<node>"); an id without a dot is its own owner
// with an empty rest. Every id of one owner is in a block whose id starts
// with "<owner>.", so a list of "<owner>." reads that range of blocks.
//
// A block's value holds its entries in id order: each an id, a revision,
// live or deleted, and a body. Revision 0 means "the revision of the write
// that stored this value" (an entry a transaction writes cannot know that
// revision before etcd commits it); an entry carried over from the value
// before keeps its own. So a watcher of the block sees exactly the entries
// a write changed (revision 0), and a deleted entry stays as a tombstone
// until the block's next write drops it, so that watchers see the delete.
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace berth::store::blocks {

// Consecutive numbered slots of one owner that share a block.
inline constexpr uint64_t kSlotsPerBlock = 16;
// Blocks of one owner's ids that are not numbered (a global service's).
inline constexpr uint32_t kHashBuckets = 1024;

// The block that holds `id`.
std::string BlockOf(std::string_view id);
// Every block that may hold an id starting with `prefix` starts with the
// result: "<owner>." when `prefix` holds a dot, else `prefix` itself.
std::string_view BlockPrefix(std::string_view prefix);

struct Entry {
  std::string id;
  int64_t revision = 0;  // 0: the revision of the value's own write
  bool deleted = false;  // a tombstone: deleted by the value's own write
  std::string body;      // live entries only
  bool operator==(const Entry&) const = default;
};

// The value of a block: "B1;" then each entry as
// "<id bytes>:<id><revision>,<l|d><body bytes>:<body>", in id order.
std::string Encode(const std::vector<Entry>& entries);
// InvalidArgument for anything Encode does not make (entries out of id
// order, a negative revision, a tombstone with a body or an old revision,
// a length past the end, trailing bytes).
Result<std::vector<Entry>> Decode(std::string_view value);

// The entries of a block stored at `revision`, as its next write starts
// from them: revision 0 becomes `revision`, tombstones are dropped.
void Carry(std::vector<Entry>& entries, int64_t revision);

// The revision an entry has in a block stored at `block_revision`.
inline int64_t RevisionOf(const Entry& e, int64_t block_revision) {
  return e.revision == 0 ? block_revision : e.revision;
}

}  // namespace berth::store::blocks
