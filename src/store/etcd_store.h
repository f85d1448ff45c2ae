// EtcdStore: the Store on an etcd cluster, shared by several berthd
// replicas (docs/ha.md), reached through etcd's v3 gRPC API (EtcdClient).
//
// Layout: an object (kind, id) is the key `<prefix><kind>/<id>` with its
// body as the value; its revision is the key's mod_revision, so the store
// revision is etcd's. A Commit is one etcd transaction: every write's
// precondition that depends on the stored state is a compare (absent:
// CREATE == 0; at a revision: MOD == revision), every write a put or a
// delete. Preconditions on an object written earlier in the same batch are
// decided here, as the other back ends decide them, and a batch touching
// one key twice sends only its last write (etcd refuses a key twice in one
// transaction). A refused transaction reads the compared keys in the same
// round trip, to name the first write that failed.
//
// A transaction whose answer is lost (a member died with it, or etcd timed
// it out during an election) is resolved by reading: with a block among
// its writes, by the block's first write after the transaction was sent
// (BlockWriteAppliedAt); else by its keys, applied when each holds what it
// wrote. One that did not apply is sent again (its compares keep it from
// applying twice). A lost answer then reaches the caller only when etcd
// stays unreachable for the client's retry_for, or has compacted the
// history the answer needs.
//
// Tasks in blocks: the objects of a packed kind (EtcdStoreOptions::
// packed_kinds, tasks by default) are kept several to a key,
// `<prefix><kind>-blocks/<block>` (task_blocks.h), each with its own body
// and revision, so that etcd stores a large service in a sixteenth of the
// keys. Every read and the change feed hand them out one object at a time,
// as any other kind. A Commit reads-modifies-writes the blocks it touches:
// it starts from the last value it knows of each (from its own commits,
// its reads and its feed; a block never seen is taken as absent), compares
// the block's mod_revision, decides each object's precondition against that
// value, and when another writer changed the block meanwhile, reads it
// again in the same round trip and tries once more. A deleted object stays
// in its block as a tombstone until the block's next write; a block of
// tombstones only is deleted after the next Compact. Open moves the tasks
// an earlier Berth kept one to a key into blocks. The blocks' own kind
// ("task-blocks") cannot be written.
//
// Limits: etcd refuses a transaction of more than --max-txn-ops operations
// (128 by default) or --max-request-bytes (1.5 MiB). EtcdStoreOptions say
// what the cluster allows; a larger Commit is refused whole
// (InvalidArgument) and batch_limits() tells callers that can split
// (berthd's control loop commits a pass in such batches, docs/ha.md).
//
// Change feed: ListAtOneRevision reads every kind at one revision (pages of
// `page_size` keys pinned to the first page's revision); Follow watches the
// prefix from the next revision on one HTTP stream, resumes after a broken
// stream from the last revision it handed out, and reports a compacted
// revision as lost.
//
// Reads are linearizable (etcd's default): a reader sees every write
// acknowledged before it asked, whichever replica made it.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/change_feed.h"
#include "store/etcd_client.h"
#include "store/store.h"
#include "store/task_blocks.h"

namespace berth::store {

struct EtcdStoreOptions {
  EtcdClientOptions client;
  // Every key starts with it (default "/berth/").
  std::string prefix = "/berth/";
  // The cluster's --max-txn-ops (etcd's default 128) and
  // --max-request-bytes (default 1.5 MiB, of which 64 KiB are left for the
  // request's own framing).
  size_t max_txn_ops = 128;
  size_t max_request_bytes = 1572864;
  // Keys per range request when listing (default 10,000).
  int64_t page_size = 10000;
  // Kinds kept in blocks (default {"task"}). Every replica of a cluster
  // must agree: it is the layout of the data.
  std::vector<std::string> packed_kinds = {"task"};
};

// The txn compare for `w`'s precondition on `key` (absent: CREATE == 0; at
// a revision: MOD == revision). `w` expects something.
etcdserverpb::Compare EtcdCompare(const std::string& key, const Write& w);

// What a key held at a revision: the revision it was read at, and the key
// (nullopt: absent).
struct KeyAtRevision {
  int64_t revision = 0;
  std::optional<mvccpb::KeyValue> kv;
};
// Whether a transaction whose answer was lost applied, and at which
// revision (nullopt: it did not): it was sent after revision `before`,
// compared a block at `compared` (its mod_revision; 0: absent) and wrote
// `value` to it. `read(at)` reads the block at revision `at` (0: now). It
// applied exactly when the block was at `compared` at `before` and its
// first write after `before` is `value`; one case reads as "did not": a
// block the transaction created and a compaction deleted since.
Result<std::optional<int64_t>> BlockWriteAppliedAt(
    const std::function<Result<KeyAtRevision>(int64_t at)>& read, int64_t before, int64_t compared,
    const std::string& value);

class EtcdStore final : public Store, public ChangeFeed {
 public:
  // Connects and reads the current revision. Unavailable: no member
  // answered; InvalidArgument: bad options.
  static Result<std::unique_ptr<EtcdStore>> Open(EtcdStoreOptions options);
  ~EtcdStore() override;

  Result<int64_t> Commit(const std::vector<Write>& writes) override;
  Result<std::optional<StoredObject>> Get(std::string_view kind,
                                          std::string_view id) const override;
  Result<std::vector<StoredObject>> List(std::string_view kind) const override;
  Result<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                               std::string_view prefix) const override;
  int64_t revision() const override { return revision_.load(); }
  BatchLimits batch_limits() const override;
  // Keeps a block's writes in one part, and counts what the transaction
  // holds: one put a block, with the block's whole value.
  std::vector<std::vector<size_t>> PartsForCommit(const std::vector<Write>& writes,
                                                  const std::vector<Write>& prefix) const override;

  Result<int64_t> LatestRevision() override;
  Result<Snapshot> ListAtOneRevision(const std::vector<std::string>& kinds) override;
  std::unique_ptr<Following> Follow(int64_t revision, Sink sink) override;

  // Drops the history before `revision` (etcd's compaction): a feed behind
  // it is lost and lists again. Then deletes the blocks whose tasks were
  // all deleted. berthd's leader calls it (docs/ha.md).
  // `timeout` (when not zero) bounds each request, as EtcdClient::Call's.
  Status Compact(int64_t revision, std::chrono::milliseconds timeout = {});

  // The key of (kind, id), and back; nullopt for a key outside the prefix.
  std::string Key(std::string_view kind, std::string_view id) const;
  std::optional<std::pair<std::string, std::string>> Split(std::string_view key) const;

  // Raises revision() to `seen` (an answer's header, a watch event's):
  // revision() is then at least every revision this process has seen, which
  // Commit's own checks rely on.
  void Saw(int64_t seen) const;

  EtcdClient& client() { return *client_; }
  const std::string& prefix() const { return options_.prefix; }

  // What one event of the prefix's watch says, as changes: an object's,
  // or a block's entries that its write changed (revision 0); nothing for
  // a key outside the layout. Remembers a block's value.
  void ChangesOf(const mvccpb::Event& event, std::vector<Change>& out) const;

 private:
  struct Physical;
  struct Plan;
  // A block's value as last known.
  struct Block {
    int64_t revision = 0;  // its mod_revision; 0: absent
    std::vector<blocks::Entry> entries;
    size_t bytes = 0;  // of its value
  };
  explicit EtcdStore(EtcdStoreOptions options);
  bool Packed(std::string_view kind) const;
  std::string BlockKey(std::string_view kind, std::string_view block) const;
  // One try of Commit: nullopt when a block changed under it (try again).
  Result<std::optional<int64_t>> TryCommit(const std::vector<Write>& writes);
  void PlanBlocks(const std::vector<Write>& writes, Plan& plan) const;
  Result<std::optional<int64_t>> Refused(const std::vector<Write>& writes, const Plan& plan,
                                         const etcdserverpb::TxnResponse& answer);
  Result<etcdserverpb::TxnResponse> Send(const etcdserverpb::TxnRequest& txn,
                                         const std::vector<Physical>& ops);
  Result<std::optional<int64_t>> AppliedAt(const std::vector<Physical>& ops, int64_t before);
  Result<std::optional<int64_t>> BlockWrittenAt(const Physical& op, int64_t before);
  // Ranges [from, to) at `at` (0: now), every page, handing each key to
  // `visit`; sets *revision to the revision read at.
  Status RangeKvs(const std::string& from, const std::string& to, int64_t at, int64_t* revision,
                  const std::function<void(const mvccpb::KeyValue&)>& visit) const;
  Result<std::vector<StoredObject>> Range(const std::string& from, const std::string& to,
                                          int64_t at, int64_t* revision) const;
  // The objects of a packed kind whose id starts with `prefix`, by id.
  Result<std::vector<StoredObject>> RangePacked(std::string_view kind, std::string_view prefix,
                                                int64_t at, int64_t* revision) const;
  // A block's value as etcd holds it; Internal, naming the key, when it is
  // damaged.
  static Result<Block> DecodeBlock(const mvccpb::KeyValue& kv);
  // Keeps `block` as the value at `key`, unless a later one is known.
  void Remember(const std::string& key, Block block) const;
  // Drops the block at `key` unless a value later than `revision` is known.
  void Forget(const std::string& key, int64_t revision) const;
  // What was just read of the block at `key` (nullopt: absent), whatever
  // was known.
  void Replace(const std::string& key, const std::optional<Block>& block) const;
  Status DropEmptyBlocks();
  Status MoveIntoBlocks(const std::string& kind);
  Status MoveIntoBlocksOnce(const std::string& kind);

  EtcdStoreOptions options_;
  std::unique_ptr<EtcdClient> client_;
  mutable std::atomic<int64_t> revision_{0};
  mutable std::mutex blocks_mu_;
  // The last value known of each block, by key.
  mutable std::unordered_map<std::string, Block> blocks_;
  std::mutex dropper_mu_;
  std::atomic<bool> dropping_{false};
  std::thread dropper_;  // DropEmptyBlocks, after a compaction
};

}  // namespace berth::store
