#include "store/etcd_store.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <set>
#include <thread>

namespace berth::store {

namespace pb = etcdserverpb;

// A packed kind's blocks are the keys of kind "<kind>-blocks".
constexpr std::string_view kBlocksSuffix = "-blocks";

namespace {

// The txn compare "`key` is at mod_revision `revision`" (0: absent).
pb::Compare ModRevisionIs(const std::string& key, int64_t revision) {
  pb::Compare compare;
  compare.set_key(key);
  compare.set_result(pb::Compare::EQUAL);
  compare.set_target(pb::Compare::MOD);
  compare.set_mod_revision(revision);
  return compare;
}

}  // namespace

pb::Compare EtcdCompare(const std::string& key, const Write& w) {
  if (w.expect != Write::Expect::kAbsent) return ModRevisionIs(key, w.expected_revision);
  pb::Compare compare;
  compare.set_key(key);
  compare.set_result(pb::Compare::EQUAL);
  compare.set_target(pb::Compare::CREATE);
  compare.set_create_revision(0);
  return compare;
}

// What a batch's earlier writes left of one key.
struct KeyState {
  enum { kUnknown, kAbsent, kPresent } state = kUnknown;
  int64_t revision = 0;         // kPresent: the stored one, or the batch's own
  const Write* last = nullptr;  // the last put or delete of the batch
};

// One put or delete of a transaction, as AppliedAt checks it.
struct EtcdStore::Physical {
  std::string key;
  const std::string* value = nullptr;  // a put's; nullptr: a delete
  int64_t after = -1;                  // a block's: the revision it was compared at
};

// One try of a Commit.
struct EtcdStore::Plan {
  struct BlockWrite {
    Block base;                       // what the batch is decided against
    std::vector<blocks::Entry> next;  // base carried, then the batch's writes
    bool touched = false;             // the batch changes it
    std::string value;                // next, encoded
  };
  std::map<std::string, BlockWrite> blocks;  // by key (stable addresses)
  std::map<std::string, KeyState> keys;      // the other objects' keys
  pb::TxnRequest txn;
  std::vector<std::string> compared;  // the compares' keys, as the failure reads them
  std::vector<Physical> ops;
  const Write* failed = nullptr;  // the first precondition the batch itself fails
  int64_t failed_actual = 0;
};

namespace {

class EtcdFollowing final : public ChangeFeed::Following {
 public:
  EtcdFollowing(EtcdStore& store, int64_t revision, ChangeFeed::Sink sink)
      : store_(store), next_(revision + 1), sink_(std::move(sink)), thread_([this] { Run(); }) {}
  ~EtcdFollowing() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    handle_.Cancel();
    thread_.join();
  }

 private:
  // Reconnects after a broken stream, from the next revision not yet handed
  // out, until stopped or lost.
  void Run() {
    while (!Stopping()) {
      std::string lost;
      pb::WatchRequest request;
      pb::WatchCreateRequest* create = request.mutable_create_request();
      create->set_key(store_.prefix());
      create->set_range_end(PrefixEnd(store_.prefix()));
      create->set_start_revision(next_);
      // A broken stream is resumed below; only a loss ends the feed.
      (void)store_.client().Watch(request, handle_,
                                  [&](const pb::WatchResponse& r) { return Receive(r, &lost); });
      if (!lost.empty()) {
        sink_.lost(Status::Unavailable(lost));
        return;
      }
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; });
    }
  }

  bool Receive(const pb::WatchResponse& result, std::string* lost) {
    if (Stopping()) return false;
    if (const int64_t compacted = result.compact_revision(); compacted != 0) {
      *lost = "etcd compacted the history up to revision " + std::to_string(compacted) +
              ", past revision " + std::to_string(next_) + " that the watch needed";
      return false;
    }
    if (result.canceled()) {
      *lost = "etcd cancelled the watch: " +
              (result.cancel_reason().empty() ? std::string("no reason") : result.cancel_reason());
      return false;
    }
    // Every revision is handed out, even one with no change to tell (the
    // old keys of a move into blocks): readers wait for revisions.
    std::vector<Change> changes;
    int64_t at = 0;
    for (const mvccpb::Event& event : result.events()) {
      const int64_t revision = event.kv().mod_revision();
      if (revision != at && at != 0) {
        Deliver(at, std::move(changes));
        changes.clear();
      }
      at = revision;
      store_.ChangesOf(event, changes);
    }
    if (at != 0) Deliver(at, std::move(changes));
    return true;
  }

  void Deliver(int64_t revision, std::vector<Change> changes) {
    next_ = revision + 1;
    store_.Saw(revision);  // before anyone can read an object of it
    sink_.changed(revision, std::move(changes));
  }

  bool Stopping() {
    std::lock_guard lock(mu_);
    return stop_;
  }

  EtcdStore& store_;
  int64_t next_;  // the next revision to hand out (the feed thread's)
  ChangeFeed::Sink sink_;
  EtcdClient::StreamHandle handle_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

EtcdStore::EtcdStore(EtcdStoreOptions options)
    : options_(std::move(options)), client_(std::make_unique<EtcdClient>(options_.client)) {}

Result<std::unique_ptr<EtcdStore>> EtcdStore::Open(EtcdStoreOptions options) {
  if (options.client.endpoints.empty()) return Status::InvalidArgument("etcd: no endpoint given");
  if (options.prefix.empty() || options.prefix.back() != '/')
    return Status::InvalidArgument("etcd: the key prefix must end with '/'");
  if (options.max_txn_ops < 2 || options.max_request_bytes < (1 << 17) || options.page_size < 1)
    return Status::InvalidArgument("etcd: max_txn_ops, max_request_bytes or page_size too small");
  for (const std::string& kind : options.packed_kinds)
    if (kind.empty() || kind.find('/') != std::string::npos || kind.ends_with(kBlocksSuffix))
      return Status::InvalidArgument("etcd: a packed kind must be a kind's name, not '" + kind +
                                     "'");
  std::unique_ptr<EtcdStore> store(new EtcdStore(std::move(options)));
  pb::RangeRequest count;
  count.set_key(store->options_.prefix);
  count.set_count_only(true);
  Result<pb::RangeResponse> answer = store->client_->Range(count);
  if (!answer.ok()) return answer.status();
  store->Saw(answer->header().revision());
  for (const std::string& kind : store->options_.packed_kinds)
    BERTH_RETURN_IF_ERROR(store->MoveIntoBlocks(kind));
  return store;
}

// An earlier Berth kept a task to a key. Each is written into its block
// (unless the block holds a later write of it: a move cut short, after
// which the new layout's writes win), then its key is deleted if it has not
// changed meanwhile. Another replica moving at the same time, or a berthd
// of the earlier version still writing, makes a step fail: it is tried
// again from the start, a few times.
Status EtcdStore::MoveIntoBlocks(const std::string& kind) {
  Status moved = Status::Ok();
  for (int attempt = 0; attempt < 5; ++attempt) {
    moved = MoveIntoBlocksOnce(kind);
    if (moved.code() != StatusCode::kConflict) return moved;
  }
  return moved;
}

Status EtcdStore::MoveIntoBlocksOnce(const std::string& kind) {
  const std::string from = Key(kind, "");
  Result<std::vector<StoredObject>> old = Range(from, PrefixEnd(from), 0, nullptr);
  if (!old.ok() || old->empty()) return old.status();
  Result<std::vector<StoredObject>> held = RangePacked(kind, "", 0, nullptr);
  if (!held.ok()) return held.status();
  std::vector<Write> writes;
  for (const StoredObject& o : *old) {
    const auto it =
        std::lower_bound(held->begin(), held->end(), o.id,
                         [](const StoredObject& h, const std::string& id) { return h.id < id; });
    if (it == held->end() || it->id != o.id)
      writes.push_back(Write::Create(kind, o.id, o.body));
    else if (it->revision < o.revision)  // the old key was written after the move
      writes.push_back(Write::Put(kind, o.id, o.body).IfRevision(it->revision));
  }
  for (const std::vector<size_t>& part : PartsForCommit(writes, {}))
    BERTH_RETURN_IF_ERROR(Commit(Gather(writes, part, {})).status());
  for (size_t i = 0; i < old->size(); i += options_.max_txn_ops) {
    pb::TxnRequest txn;
    for (size_t j = i; j < std::min(old->size(), i + options_.max_txn_ops); ++j) {
      const std::string key = Key(kind, (*old)[j].id);
      *txn.add_compare() = ModRevisionIs(key, (*old)[j].revision);
      txn.add_success()->mutable_request_delete_range()->set_key(key);
    }
    Result<pb::TxnResponse> answer = client_->Txn(txn);
    if (!answer.ok()) return answer.status();
    if (!answer->succeeded())
      return Status::Conflict("etcd: a " + kind +
                              " kept one to a key changed while it was moved into its block "
                              "(is a berthd of an earlier version still running?)");
  }
  return Status::Ok();
}

std::string EtcdStore::Key(std::string_view kind, std::string_view id) const {
  std::string key = options_.prefix;
  key.append(kind).append("/").append(id);
  return key;
}

std::optional<std::pair<std::string, std::string>> EtcdStore::Split(std::string_view key) const {
  if (!key.starts_with(options_.prefix)) return std::nullopt;
  key.remove_prefix(options_.prefix.size());
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  return std::make_pair(std::string(key.substr(0, slash)), std::string(key.substr(slash + 1)));
}

bool EtcdStore::Packed(std::string_view kind) const {
  return std::find(options_.packed_kinds.begin(), options_.packed_kinds.end(), kind) !=
         options_.packed_kinds.end();
}

std::string EtcdStore::BlockKey(std::string_view kind, std::string_view block) const {
  return Key(std::string(kind) + std::string(kBlocksSuffix), block);
}

void EtcdStore::ChangesOf(const mvccpb::Event& event, std::vector<Change>& out) const {
  const mvccpb::KeyValue& kv = event.kv();
  std::optional<std::pair<std::string, std::string>> name = Split(kv.key());
  if (!name || Packed(name->first)) return;  // a packed kind's old key: being moved
  const int64_t revision = kv.mod_revision();
  if (std::string kind = name->first.substr(0, name->first.size() - kBlocksSuffix.size());
      name->first.ends_with(kBlocksSuffix) && Packed(kind)) {
    // A block is deleted only once its entries' tombstones said what went.
    if (event.type() == mvccpb::Event::DELETE) return Forget(kv.key(), revision);
    Result<Block> block = DecodeBlock(kv);
    if (!block.ok()) return;  // not Berth's: nothing in it is an object
    for (const blocks::Entry& e : block->entries)
      if (e.revision == 0)
        out.push_back(
            {e.deleted ? Write::Op::kDelete : Write::Op::kPut, kind, e.id, e.body, revision});
    Remember(kv.key(), std::move(*block));
    return;
  }
  Change change{Write::Op::kPut, std::move(name->first), std::move(name->second), "", revision};
  if (event.type() == mvccpb::Event::DELETE)
    change.op = Write::Op::kDelete;
  else
    change.body = kv.value();
  out.push_back(std::move(change));
}

Result<EtcdStore::Block> EtcdStore::DecodeBlock(const mvccpb::KeyValue& kv) {
  Result<std::vector<blocks::Entry>> entries = blocks::Decode(kv.value());
  if (!entries.ok())
    return Status::Internal("etcd key " + kv.key() + ": " + entries.status().message());
  return Block{kv.mod_revision(), std::move(*entries), kv.value().size()};
}

void EtcdStore::Remember(const std::string& key, Block block) const {
  std::lock_guard lock(blocks_mu_);
  Block& known = blocks_[key];
  if (block.revision < known.revision) return;  // a later value is known
  known = std::move(block);
}

void EtcdStore::Forget(const std::string& key, int64_t revision) const {
  std::lock_guard lock(blocks_mu_);
  if (const auto known = blocks_.find(key);
      known != blocks_.end() && known->second.revision <= revision)
    blocks_.erase(known);
}

void EtcdStore::Replace(const std::string& key, const std::optional<Block>& block) const {
  std::lock_guard lock(blocks_mu_);
  if (block)
    blocks_[key] = *block;
  else
    blocks_.erase(key);
}

void EtcdStore::Saw(int64_t seen) const {
  int64_t known = revision_.load();
  while (seen > known && !revision_.compare_exchange_weak(known, seen)) {
  }
}

Store::BatchLimits EtcdStore::batch_limits() const {
  // Bodies travel as they are, in protobuf; 64 KiB are left for the keys,
  // the compares and the request's framing.
  return {options_.max_txn_ops, options_.max_request_bytes - (1 << 16)};
}

// A block's writes go in one part (parts in flight at once would
// otherwise change each other's blocks and be tried again), at the place
// of its first write; a part holds as many blocks and other writes as one
// transaction takes, a block counted with its whole value (as known, or as
// if full of writes like its first).
std::vector<std::vector<size_t>> EtcdStore::PartsForCommit(const std::vector<Write>& writes,
                                                           const std::vector<Write>& prefix) const {
  struct Unit {
    std::vector<size_t> writes;
    size_t bytes = 0;
  };
  std::vector<Unit> units;
  std::unordered_map<std::string, size_t> unit_of_block;
  {
    std::lock_guard lock(blocks_mu_);
    for (size_t i = 0; i < writes.size(); ++i) {
      const Write& w = writes[i];
      const size_t size = WriteBytes(w) + 32;  // and an entry's framing
      if (!Packed(w.kind)) {
        units.push_back({{i}, WriteBytes(w)});
        continue;
      }
      std::string block = BlockKey(w.kind, blocks::BlockOf(w.id));
      const auto [it, added] = unit_of_block.try_emplace(block, units.size());
      if (added) {
        const auto known = blocks_.find(block);
        units.push_back(
            {{}, known != blocks_.end() ? known->second.bytes : blocks::kSlotsPerBlock * size});
      }
      units[it->second].writes.push_back(i);
      units[it->second].bytes += size;
    }
  }
  const BatchLimits limits = batch_limits();
  size_t prefix_bytes = 0;
  for (const Write& p : prefix) prefix_bytes += WriteBytes(p);
  std::vector<std::vector<size_t>> parts;
  size_t ops = 0, bytes = 0;
  for (Unit& unit : units) {
    if (parts.empty() || ops + 1 > limits.writes || bytes + unit.bytes > limits.bytes) {
      parts.emplace_back();
      ops = prefix.size();
      bytes = prefix_bytes;
    }
    std::vector<size_t>& part = parts.back();
    part.insert(part.end(), unit.writes.begin(), unit.writes.end());
    ++ops;
    bytes += unit.bytes;
  }
  for (std::vector<size_t>& part : parts) std::sort(part.begin(), part.end());
  return parts;
}

Result<int64_t> EtcdStore::Commit(const std::vector<Write>& writes) {
  BERTH_RETURN_IF_ERROR(ValidateWrites(writes));
  for (size_t i = 0; i < writes.size(); ++i) {
    const std::string& kind = writes[i].kind;
    if (kind.find('/') != std::string::npos)
      return Status::InvalidArgument("write " + std::to_string(i) + ": a kind must not hold '/'");
    if (kind.ends_with(kBlocksSuffix) &&
        Packed(std::string_view(kind).substr(0, kind.size() - kBlocksSuffix.size())))
      return Status::InvalidArgument("write " + std::to_string(i) + ": kind '" + kind +
                                     "' is the store's own");
  }
  if (writes.empty()) return revision();
  // Each try that fails on a block means another commit changed it, so
  // tries are few unless many writers share one block.
  constexpr int kTries = 100;
  for (int i = 0; i < kTries; ++i) {
    Result<std::optional<int64_t>> done = TryCommit(writes);
    if (!done.ok()) return done.status();
    if (done->has_value()) return **done;
  }
  return Status::Unavailable("etcd: the batch's task blocks kept changing under it (" +
                             std::to_string(kTries) + " tries)");
}

// The blocks the batch's packed writes fall in, as last known, each
// carried for its next write. A block never seen is taken as absent,
// without asking: it usually is (a new service's), and when it is not,
// etcd refuses the transaction and hands back its value.
void EtcdStore::PlanBlocks(const std::vector<Write>& writes, Plan& plan) const {
  std::lock_guard lock(blocks_mu_);
  for (const Write& w : writes) {
    if (!Packed(w.kind)) continue;
    const std::string key = BlockKey(w.kind, blocks::BlockOf(w.id));
    const auto [it, added] = plan.blocks.try_emplace(key);
    if (!added) continue;
    if (const auto known = blocks_.find(key); known != blocks_.end()) {
      it->second.base = known->second;
      it->second.next = known->second.entries;
      blocks::Carry(it->second.next, known->second.revision);
    }
  }
}

namespace {

bool ById(const blocks::Entry& e, std::string_view id) { return e.id < id; }

// The revision of `id` in a block's `entries` stored at `revision` (0:
// absent or deleted).
int64_t RevisionIn(const std::vector<blocks::Entry>& entries, int64_t revision,
                   std::string_view id) {
  const auto it = std::lower_bound(entries.begin(), entries.end(), id, ById);
  if (it == entries.end() || it->id != id || it->deleted) return 0;
  return blocks::RevisionOf(*it, revision);
}

}  // namespace

Result<std::optional<int64_t>> EtcdStore::TryCommit(const std::vector<Write>& writes) {
  Plan plan;
  PlanBlocks(writes, plan);
  pb::TxnRequest& txn = plan.txn;
  const auto fails = [&](const Write& w, int64_t actual) {
    if (plan.failed == nullptr && !PreconditionHolds(w, actual)) {
      plan.failed = &w;
      plan.failed_actual = actual;
    }
  };
  for (const Write& w : writes) {
    if (Packed(w.kind)) {
      Plan::BlockWrite& b = plan.blocks[BlockKey(w.kind, blocks::BlockOf(w.id))];
      auto it = std::lower_bound(b.next.begin(), b.next.end(), w.id, ById);
      const bool live = it != b.next.end() && it->id == w.id && !it->deleted;
      fails(w, !live ? 0 : it->revision == 0 ? revision() + 1 : it->revision);
      if (w.op == Write::Op::kPut) {
        blocks::Entry put{w.id, 0, false, w.body};
        if (it != b.next.end() && it->id == w.id)
          *it = std::move(put);
        else
          b.next.insert(it, std::move(put));
        b.touched = true;
      } else if (w.op == Write::Op::kDelete && live) {
        if (RevisionIn(b.base.entries, b.base.revision, w.id) != 0)
          *it = {w.id, 0, true, ""};  // a tombstone tells watchers
        else
          b.next.erase(it);
        b.touched = true;
      }
      continue;
    }
    // Decide what the stored state must be (compares) and what the batch
    // decides itself (a precondition on a key an earlier write touched).
    const std::string key = Key(w.kind, w.id);
    KeyState& k = plan.keys[key];
    if (w.expect != Write::Expect::kAnything) {
      if (k.state == KeyState::kUnknown) {
        *txn.add_compare() = EtcdCompare(key, w);
        pb::RangeRequest* read = txn.add_failure()->mutable_request_range();
        read->set_key(key);
        read->set_keys_only(true);
        plan.compared.push_back(key);
        k.state = w.expect == Write::Expect::kAbsent ? KeyState::kAbsent : KeyState::kPresent;
        k.revision = w.expected_revision;
      } else {
        fails(w, k.state == KeyState::kPresent ? k.revision : 0);
      }
    }
    if (w.op == Write::Op::kCheck) continue;
    k.state = w.op == Write::Op::kPut ? KeyState::kPresent : KeyState::kAbsent;
    k.revision = revision() + 1;  // the batch's own; only a refusal's message shows it
    k.last = &w;
  }
  // Every block the batch decided on must still be what it was decided on.
  for (auto& [key, b] : plan.blocks) {
    *txn.add_compare() = ModRevisionIs(key, b.base.revision);
    txn.add_failure()->mutable_request_range()->set_key(key);
    plan.compared.push_back(key);
  }
  if (plan.failed == nullptr) {
    for (const auto& [key, k] : plan.keys) {
      if (k.last == nullptr) continue;
      if (k.last->op == Write::Op::kPut) {
        pb::PutRequest* put = txn.add_success()->mutable_request_put();
        put->set_key(key);
        put->set_value(k.last->body);
        plan.ops.push_back({key, &k.last->body, -1});
      } else {
        txn.add_success()->mutable_request_delete_range()->set_key(key);
        plan.ops.push_back({key, nullptr, -1});
      }
    }
    for (auto& [key, b] : plan.blocks) {
      if (!b.touched || (b.next.empty() && b.base.revision == 0)) continue;
      b.value = blocks::Encode(b.next);
      pb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(key);
      put->set_value(b.value);
      plan.ops.push_back({key, &b.value, b.base.revision});
    }
  }
  const BatchLimits limits = batch_limits();
  if (static_cast<size_t>(txn.success_size()) > limits.writes ||
      static_cast<size_t>(txn.compare_size()) > limits.writes ||
      txn.ByteSizeLong() + (1 << 16) > options_.max_request_bytes)
    return Status::InvalidArgument(
        "a batch of " + std::to_string(writes.size()) +
        " writes is more than one etcd transaction takes (--max-txn-ops " +
        std::to_string(options_.max_txn_ops) + ", --max-request-bytes " +
        std::to_string(options_.max_request_bytes) + ")");
  Result<pb::TxnResponse> answer = Send(txn, plan.ops);
  if (!answer.ok()) return answer.status();
  Saw(answer->header().revision());
  if (!answer->succeeded()) return Refused(writes, plan, *answer);
  if (plan.failed != nullptr) return PreconditionFailed(*plan.failed, plan.failed_actual);
  const int64_t committed = answer->header().revision();
  for (auto& [key, b] : plan.blocks)
    if (!b.value.empty()) Remember(key, {committed, std::move(b.next), b.value.size()});
  return std::optional<int64_t>(committed);
}

// Replays the batch on what the refused transaction read: the first
// precondition that fails there is the answer; when none does, only a block
// had changed since it was last known (now remembered): try again.
Result<std::optional<int64_t>> EtcdStore::Refused(const std::vector<Write>& writes,
                                                  const Plan& plan, const pb::TxnResponse& answer) {
  std::map<std::string, int64_t> stored;  // other objects' keys
  std::map<std::string, Block> fresh;     // blocks
  for (int i = 0; i < answer.responses_size() && i < static_cast<int>(plan.compared.size()); ++i) {
    const std::string& key = plan.compared[static_cast<size_t>(i)];
    const auto& kvs = answer.responses(i).response_range().kvs();
    if (!plan.blocks.contains(key)) {
      stored[key] = kvs.empty() ? 0 : kvs[0].mod_revision();
      continue;
    }
    // Read just now: what the next try starts from, whatever was known.
    Block& b = fresh[key];
    if (kvs.empty()) {
      Replace(key, std::nullopt);
      continue;
    }
    Result<Block> decoded = DecodeBlock(kvs[0]);
    if (!decoded.ok()) return decoded.status();
    b = std::move(*decoded);
    Replace(key, b);
  }
  std::map<std::string, int64_t> now;  // by object (its key in the old layout)
  for (const Write& w : writes) {
    const std::string key = Key(w.kind, w.id);
    auto it = now.find(key);
    int64_t actual = 0;
    if (it != now.end()) {
      actual = it->second;
    } else if (Packed(w.kind)) {
      const Block& b = fresh[BlockKey(w.kind, blocks::BlockOf(w.id))];
      actual = RevisionIn(b.entries, b.revision, w.id);
    } else {
      actual = stored[key];
    }
    if (!PreconditionHolds(w, actual)) return PreconditionFailed(w, actual);
    if (w.op != Write::Op::kCheck) now[key] = w.op == Write::Op::kPut ? revision() + 1 : 0;
  }
  return std::optional<int64_t>();
}

// A transaction whose answer was lost (its member died, or etcd timed it
// out while electing a leader) may or may not have applied: AppliedAt reads
// what it can. If it applied, that is the answer; if not, it is sent again
// (its compares keep a second apply from taking effect twice), until
// `retry_for` has passed.
Result<pb::TxnResponse> EtcdStore::Send(const pb::TxnRequest& txn,
                                        const std::vector<Physical>& ops) {
  bool unknown = false;
  const int64_t before = revision();  // a transaction sent now applies after it
  Result<pb::TxnResponse> answer = client_->Txn(txn, false, &unknown);
  const auto deadline = std::chrono::steady_clock::now() + options_.client.retry_for;
  while (!answer.ok() && unknown && std::chrono::steady_clock::now() < deadline) {
    Result<std::optional<int64_t>> applied = AppliedAt(ops, before);
    if (applied.ok() && applied->has_value()) {
      pb::TxnResponse done;
      done.mutable_header()->set_revision(**applied);
      done.set_succeeded(true);
      return done;
    }
    if (applied.ok()) {
      answer = client_->Txn(txn, false, &unknown);
    } else if (applied.status().code() == StatusCode::kInvalidArgument) {
      return Status::Unavailable(
          "etcd lost a transaction's answer and the history that would "
          "tell whether it applied: " +
          applied.status().message());
    } else {  // etcd unreachable: a pause, not a spin
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return answer;
}

// The revision a lost transaction applied at; nullopt when it did not.
// With a block among its writes the answer is exact: the transaction was
// sent after revision `before` and compared the block at `op.after`, so it
// applied exactly when the block was still at `op.after` at `before` and
// its first write after `before` is the transaction's value (a later writer
// may have changed the block since). Without one, it applied when every put's key holds its
// value and every delete's key is absent. A transaction that writes
// nothing is sent again: that is harmless, and nothing can be read of it.
Result<std::optional<int64_t>> EtcdStore::AppliedAt(const std::vector<Physical>& ops,
                                                    int64_t before) {
  for (const Physical& op : ops)
    if (op.after >= 0) return BlockWrittenAt(op, before);
  if (ops.empty()) return std::optional<int64_t>();
  pb::TxnRequest reads;
  for (const Physical& op : ops) reads.add_success()->mutable_request_range()->set_key(op.key);
  Result<pb::TxnResponse> answer = client_->Txn(reads, true);
  if (!answer.ok()) return answer.status();
  int64_t revision = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (static_cast<int>(i) >= answer->responses_size()) return std::optional<int64_t>();
    const auto& kvs = answer->responses(static_cast<int>(i)).response_range().kvs();
    const bool put = ops[i].value != nullptr;
    if (kvs.empty() == put) return std::optional<int64_t>();
    if (put && kvs[0].value() != *ops[i].value) return std::optional<int64_t>();
    if (put) revision = std::max(revision, kvs[0].mod_revision());
  }
  if (revision == 0) revision = answer->header().revision();
  return std::optional<int64_t>(revision);
}

Result<std::optional<int64_t>> EtcdStore::BlockWrittenAt(const Physical& op, int64_t before) {
  return BlockWriteAppliedAt(
      [&](int64_t at) -> Result<KeyAtRevision> {
        pb::RangeRequest request;
        request.set_key(op.key);
        if (at != 0) request.set_revision(at);
        Result<pb::RangeResponse> answer = client_->Range(request);
        if (!answer.ok()) return answer.status();
        Saw(answer->header().revision());
        KeyAtRevision read{answer->header().revision(), std::nullopt};
        if (!answer->kvs().empty()) read.kv = answer->kvs(0);
        return read;
      },
      before, op.after, *op.value);
}

// Finds the block's first write after `before` by halving the revisions
// between it and now (a read at a revision gives the value then).
Result<std::optional<int64_t>> BlockWriteAppliedAt(
    const std::function<Result<KeyAtRevision>(int64_t at)>& read, int64_t before, int64_t compared,
    const std::string& value) {
  const auto mod = [](const KeyAtRevision& k) { return k.kv ? k.kv->mod_revision() : 0; };
  Result<KeyAtRevision> then = read(before);
  if (!then.ok()) return then.status();
  if (mod(*then) != compared) return std::optional<int64_t>();  // its compare failed
  // Changed since `before`: written after it, or gone (a block is deleted
  // only at a compaction, and not written again before that).
  const auto changed = [&](const KeyAtRevision& k) {
    return mod(k) > before || (!k.kv && compared != 0);
  };
  Result<KeyAtRevision> latest = read(0);
  if (!latest.ok()) return latest.status();
  if (!changed(*latest)) return std::optional<int64_t>();
  int64_t low = before + 1, high = latest->kv ? mod(*latest) : latest->revision;
  while (low < high) {
    const int64_t middle = low + (high - low) / 2;
    Result<KeyAtRevision> at = read(middle);
    if (!at.ok()) return at.status();
    if (changed(*at))
      high = middle;
    else
      low = middle + 1;
  }
  Result<KeyAtRevision> first = read(low);
  if (!first.ok()) return first.status();
  if (!first->kv || first->kv->value() != value) return std::optional<int64_t>();
  return std::optional<int64_t>(first->kv->mod_revision());
}

Status EtcdStore::RangeKvs(const std::string& from, const std::string& to, int64_t at,
                           int64_t* revision,
                           const std::function<void(const mvccpb::KeyValue&)>& visit) const {
  std::string next = from;
  for (;;) {
    pb::RangeRequest request;
    request.set_key(next);
    request.set_range_end(to);
    request.set_limit(options_.page_size);
    if (at != 0) request.set_revision(at);
    Result<pb::RangeResponse> answer = client_->Range(request);
    if (!answer.ok()) return answer.status();
    Saw(answer->header().revision());
    if (at == 0) at = answer->header().revision();
    for (const mvccpb::KeyValue& kv : answer->kvs()) visit(kv);
    if (!answer->more() || answer->kvs().empty()) break;
    next = answer->kvs(answer->kvs_size() - 1).key() + '\0';
  }
  if (revision != nullptr) *revision = at;
  return Status::Ok();
}

Result<std::vector<StoredObject>> EtcdStore::Range(const std::string& from, const std::string& to,
                                                   int64_t at, int64_t* revision) const {
  std::vector<StoredObject> out;
  BERTH_RETURN_IF_ERROR(RangeKvs(from, to, at, revision, [&](const mvccpb::KeyValue& kv) {
    if (std::optional<std::pair<std::string, std::string>> name = Split(kv.key()))
      out.push_back(
          {std::move(name->first), std::move(name->second), kv.value(), kv.mod_revision()});
  }));
  return out;
}

Result<std::vector<StoredObject>> EtcdStore::RangePacked(std::string_view kind,
                                                         std::string_view prefix, int64_t at,
                                                         int64_t* revision) const {
  const std::string from = BlockKey(kind, blocks::BlockPrefix(prefix));
  std::vector<StoredObject> out;
  Status damaged = Status::Ok();
  BERTH_RETURN_IF_ERROR(
      RangeKvs(from, PrefixEnd(from), at, revision, [&](const mvccpb::KeyValue& kv) {
        Result<Block> block = DecodeBlock(kv);
        if (!block.ok()) {
          damaged = block.status();
          return;
        }
        for (const blocks::Entry& e : block->entries)
          if (!e.deleted && e.id.starts_with(prefix))
            out.push_back(
                {std::string(kind), e.id, e.body, blocks::RevisionOf(e, kv.mod_revision())});
        Remember(kv.key(), std::move(*block));
      }));
  if (!damaged.ok()) return damaged;
  std::sort(out.begin(), out.end(),
            [](const StoredObject& a, const StoredObject& b) { return a.id < b.id; });
  return out;
}

Result<std::optional<StoredObject>> EtcdStore::Get(std::string_view kind,
                                                   std::string_view id) const {
  if (Packed(kind)) {
    const std::string key = BlockKey(kind, blocks::BlockOf(id));
    std::optional<StoredObject> found;
    Status damaged = Status::Ok();
    BERTH_RETURN_IF_ERROR(RangeKvs(key, key + '\0', 0, nullptr, [&](const mvccpb::KeyValue& kv) {
      Result<Block> block = DecodeBlock(kv);
      if (!block.ok()) {
        damaged = block.status();
        return;
      }
      const std::vector<blocks::Entry>& entries = block->entries;
      const auto it = std::lower_bound(entries.begin(), entries.end(), id, ById);
      if (it != entries.end() && it->id == id && !it->deleted)
        found = StoredObject{std::string(kind), it->id, it->body,
                             blocks::RevisionOf(*it, kv.mod_revision())};
      Remember(key, std::move(*block));
    }));
    if (!damaged.ok()) return damaged;
    return found;
  }
  const std::string key = Key(kind, id);
  Result<std::vector<StoredObject>> found = Range(key, key + '\0', 0, nullptr);
  if (!found.ok()) return found.status();
  if (found->empty()) return std::optional<StoredObject>();
  return std::optional<StoredObject>(std::move(found->front()));
}

Result<std::vector<StoredObject>> EtcdStore::List(std::string_view kind) const {
  return ListPrefix(kind, "");
}

Result<std::vector<StoredObject>> EtcdStore::ListPrefix(std::string_view kind,
                                                        std::string_view prefix) const {
  if (Packed(kind)) return RangePacked(kind, prefix, 0, nullptr);
  const std::string from = Key(kind, prefix);
  return Range(from, PrefixEnd(from), 0, nullptr);
}

Result<int64_t> EtcdStore::LatestRevision() {
  pb::RangeRequest request;  // one key, counted: etcd answers with its revision
  request.set_key(options_.prefix);
  request.set_count_only(true);
  Result<pb::RangeResponse> answer = client_->Range(request);
  if (!answer.ok()) return answer.status();
  Saw(answer->header().revision());
  return answer->header().revision();
}

Result<Snapshot> EtcdStore::ListAtOneRevision(const std::vector<std::string>& kinds) {
  Snapshot snapshot;
  for (const std::string& kind : kinds) {
    const std::string from = Key(kind, "");
    Result<std::vector<StoredObject>> listed =
        Packed(kind) ? RangePacked(kind, "", snapshot.revision, &snapshot.revision)
                     : Range(from, PrefixEnd(from), snapshot.revision, &snapshot.revision);
    if (!listed.ok()) return listed.status();
    snapshot.kinds.push_back(std::move(*listed));
  }
  if (snapshot.revision == 0) snapshot.revision = revision();
  return snapshot;
}

std::unique_ptr<ChangeFeed::Following> EtcdStore::Follow(int64_t revision, Sink sink) {
  return std::make_unique<EtcdFollowing>(*this, revision, std::move(sink));
}

Status EtcdStore::Compact(int64_t revision, std::chrono::milliseconds timeout) {
  Result<EtcdJson> answer = client_->Call(
      "/v3/kv/compaction", {{"revision", std::to_string(revision)}}, false, nullptr, timeout);
  if (!answer.ok()) return answer.status();
  Saw(EtcdInt(answer->value("header", EtcdJson::object()), "revision"));
  // On a thread of its own: the caller (the leader's renewals) must not
  // wait for transactions of blocks.
  std::lock_guard lock(dropper_mu_);
  if (!dropping_.exchange(true)) {
    if (dropper_.joinable()) dropper_.join();
    dropper_ = std::thread([this] {
      (void)DropEmptyBlocks();  // what fails is tried at the next compaction
      dropping_ = false;
    });
  }
  return Status::Ok();
}

EtcdStore::~EtcdStore() {
  std::lock_guard lock(dropper_mu_);
  if (dropper_.joinable()) dropper_.join();
}

// A block whose tasks were all deleted keeps their tombstones until watchers
// have seen them; then (at a compaction) it goes, unless it was written
// again meanwhile. Many go in one transaction; when one of them was
// written, that transaction's blocks go one at a time.
Status EtcdStore::DropEmptyBlocks() {
  std::vector<std::pair<std::string, int64_t>> empty;
  {
    std::lock_guard lock(blocks_mu_);
    for (const auto& [key, b] : blocks_)
      if (b.revision > 0 && std::all_of(b.entries.begin(), b.entries.end(),
                                        [](const blocks::Entry& e) { return e.deleted; }))
        empty.emplace_back(key, b.revision);
  }
  const auto drop = [&](size_t from, size_t to) -> Result<bool> {
    pb::TxnRequest txn;
    for (size_t i = from; i < to; ++i) {
      *txn.add_compare() = ModRevisionIs(empty[i].first, empty[i].second);
      txn.add_success()->mutable_request_delete_range()->set_key(empty[i].first);
    }
    Result<pb::TxnResponse> answer = client_->Txn(txn);
    if (!answer.ok()) return answer.status();
    Saw(answer->header().revision());
    // A block refused alone was written again: the feed brings its value.
    if (answer->succeeded() || to == from + 1)
      for (size_t i = from; i < to; ++i) Forget(empty[i].first, empty[i].second);
    return answer->succeeded();
  };
  for (size_t from = 0; from < empty.size(); from += options_.max_txn_ops) {
    const size_t to = std::min(empty.size(), from + options_.max_txn_ops);
    Result<bool> dropped = drop(from, to);
    if (!dropped.ok()) return dropped.status();
    for (size_t i = from; !*dropped && i < to; ++i)
      if (Result<bool> one = drop(i, i + 1); !one.ok()) return one.status();
  }
  return Status::Ok();
}

}  // namespace berth::store
