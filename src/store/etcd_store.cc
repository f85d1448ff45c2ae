#include "store/etcd_store.h"

#include <condition_variable>
#include <map>
#include <thread>

namespace berth::store {

namespace pb = etcdserverpb;

pb::Compare EtcdCompare(const std::string& key, const Write& w) {
  pb::Compare compare;
  compare.set_key(key);
  compare.set_result(pb::Compare::EQUAL);
  if (w.expect == Write::Expect::kAbsent) {
    compare.set_target(pb::Compare::CREATE);
    compare.set_create_revision(0);
  } else {
    compare.set_target(pb::Compare::MOD);
    compare.set_mod_revision(w.expected_revision);
  }
  return compare;
}

// What a batch's earlier writes left of one key.
struct EtcdStore::KeyState {
  enum { kUnknown, kAbsent, kPresent } state = kUnknown;
  int64_t revision = 0;         // kPresent: the stored one, or the batch's own
  const Write* last = nullptr;  // the last put or delete of the batch
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
    std::vector<Change> changes;
    int64_t at = 0;
    for (const mvccpb::Event& event : result.events()) {
      const mvccpb::KeyValue& kv = event.kv();
      const int64_t revision = kv.mod_revision();
      if (revision != at && !changes.empty()) {
        Deliver(at, std::move(changes));
        changes.clear();
      }
      at = revision;
      std::optional<std::pair<std::string, std::string>> name = store_.Split(kv.key());
      if (!name) continue;
      Change change{Write::Op::kPut, std::move(name->first), std::move(name->second), "", revision};
      if (event.type() == mvccpb::Event::DELETE)
        change.op = Write::Op::kDelete;
      else
        change.body = kv.value();
      changes.push_back(std::move(change));
    }
    if (!changes.empty()) Deliver(at, std::move(changes));
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
  std::unique_ptr<EtcdStore> store(new EtcdStore(std::move(options)));
  pb::RangeRequest count;
  count.set_key(store->options_.prefix);
  count.set_count_only(true);
  Result<pb::RangeResponse> answer = store->client_->Range(count);
  if (!answer.ok()) return answer.status();
  store->Saw(answer->header().revision());
  return store;
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

Result<int64_t> EtcdStore::Commit(const std::vector<Write>& writes) {
  BERTH_RETURN_IF_ERROR(ValidateWrites(writes));
  for (size_t i = 0; i < writes.size(); ++i)
    if (writes[i].kind.find('/') != std::string::npos)
      return Status::InvalidArgument("write " + std::to_string(i) + ": a kind must not hold '/'");
  if (writes.empty()) return revision();
  // Decide what the stored state must be (compares) and what the batch
  // decides itself (a precondition on a key an earlier write touched).
  std::map<std::string, KeyState> keys;
  pb::TxnRequest txn;
  const Write* failed = nullptr;
  int64_t failed_actual = 0;
  for (const Write& w : writes) {
    const std::string key = Key(w.kind, w.id);
    KeyState& k = keys[key];
    if (w.expect != Write::Expect::kAnything) {
      if (k.state == KeyState::kUnknown) {
        *txn.add_compare() = EtcdCompare(key, w);
        pb::RangeRequest* read = txn.add_failure()->mutable_request_range();
        read->set_key(key);
        read->set_keys_only(true);
        k.state = w.expect == Write::Expect::kAbsent ? KeyState::kAbsent : KeyState::kPresent;
        k.revision = w.expected_revision;
      } else if (const int64_t actual = k.state == KeyState::kPresent ? k.revision : 0;
                 failed == nullptr && !PreconditionHolds(w, actual)) {
        failed = &w;
        failed_actual = actual;
      }
    }
    if (w.op == Write::Op::kCheck) continue;
    k.state = w.op == Write::Op::kPut ? KeyState::kPresent : KeyState::kAbsent;
    k.revision = revision() + 1;  // the batch's own; only a refusal's message shows it
    k.last = &w;
  }
  if (failed == nullptr)
    for (const auto& [key, k] : keys) {
      if (k.last == nullptr) continue;
      if (k.last->op == Write::Op::kPut) {
        pb::PutRequest* put = txn.add_success()->mutable_request_put();
        put->set_key(key);
        put->set_value(k.last->body);
      } else {
        txn.add_success()->mutable_request_delete_range()->set_key(key);
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
  Result<pb::TxnResponse> answer = Send(txn, keys);
  if (!answer.ok()) return answer.status();
  Saw(answer->header().revision());
  if (answer->succeeded()) {
    if (failed != nullptr) return PreconditionFailed(*failed, failed_actual);
    return answer->header().revision();
  }
  // Replay the batch on the stored revisions read in the same transaction.
  std::map<std::string, int64_t> stored;
  for (const pb::ResponseOp& response : answer->responses())
    for (const mvccpb::KeyValue& kv : response.response_range().kvs())
      stored[kv.key()] = kv.mod_revision();
  std::map<std::string, int64_t> now;
  for (const Write& w : writes) {
    const std::string key = Key(w.kind, w.id);
    auto it = now.find(key);
    const int64_t actual = it != now.end() ? it->second : stored[key];
    if (!PreconditionHolds(w, actual)) return PreconditionFailed(w, actual);
    if (w.op != Write::Op::kCheck) now[key] = w.op == Write::Op::kPut ? revision() + 1 : 0;
  }
  return Status::Conflict("a precondition of the batch failed");
}

// A transaction whose answer was lost (its member died, or etcd timed it
// out while electing a leader) may or may not have applied: read its keys.
// If each holds what the transaction wrote, it applied; if not, it did not
// (its compares keep a second apply from taking effect twice) and is sent
// again, until `retry_for` has passed.
Result<pb::TxnResponse> EtcdStore::Send(const pb::TxnRequest& txn,
                                        const std::map<std::string, KeyState>& keys) {
  bool unknown = false;
  Result<pb::TxnResponse> answer = client_->Txn(txn, false, &unknown);
  const auto deadline = std::chrono::steady_clock::now() + options_.client.retry_for;
  while (!answer.ok() && unknown && std::chrono::steady_clock::now() < deadline) {
    Result<std::optional<int64_t>> applied = AppliedAt(keys);
    if (applied.ok() && applied->has_value()) {
      pb::TxnResponse done;
      done.mutable_header()->set_revision(**applied);
      done.set_succeeded(true);
      return done;
    }
    if (applied.ok()) answer = client_->Txn(txn, false, &unknown);
  }
  return answer;
}

// The revision at which every put of `keys` holds its value and every
// delete is absent; nullopt when they do not.
Result<std::optional<int64_t>> EtcdStore::AppliedAt(const std::map<std::string, KeyState>& keys) {
  pb::TxnRequest reads;
  for (const auto& [key, k] : keys)
    if (k.last != nullptr) reads.add_success()->mutable_request_range()->set_key(key);
  Result<pb::TxnResponse> answer = client_->Txn(reads, true);
  if (!answer.ok()) return answer.status();
  int64_t revision = 0;
  int i = 0;
  for (const auto& [key, k] : keys) {
    if (k.last == nullptr) continue;
    if (i >= answer->responses_size()) return std::optional<int64_t>();
    const auto& kvs = answer->responses(i++).response_range().kvs();
    const bool put = k.last->op == Write::Op::kPut;
    if (kvs.empty() == put) return std::optional<int64_t>();
    if (put && kvs[0].value() != k.last->body) return std::optional<int64_t>();
    if (put) revision = std::max(revision, kvs[0].mod_revision());
  }
  if (revision == 0) revision = answer->header().revision();
  return std::optional<int64_t>(revision);
}

Result<std::vector<StoredObject>> EtcdStore::Range(const std::string& from, const std::string& to,
                                                   int64_t at, int64_t* revision) const {
  std::vector<StoredObject> out;
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
    const std::string* last = nullptr;
    for (const mvccpb::KeyValue& kv : answer->kvs()) {
      if (std::optional<std::pair<std::string, std::string>> name = Split(kv.key()))
        out.push_back(
            {std::move(name->first), std::move(name->second), kv.value(), kv.mod_revision()});
      last = &kv.key();
    }
    if (!answer->more() || last == nullptr) break;
    next = *last + '\0';
  }
  if (revision != nullptr) *revision = at;
  return out;
}

Result<std::optional<StoredObject>> EtcdStore::Get(std::string_view kind,
                                                   std::string_view id) const {
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
        Range(from, PrefixEnd(from), snapshot.revision, &snapshot.revision);
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
  return Status::Ok();
}

}  // namespace berth::store
