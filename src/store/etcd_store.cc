#include "store/etcd_store.h"

#include <condition_variable>
#include <map>
#include <thread>

namespace berth::store {

EtcdJson EtcdCompare(const std::string& key, const Write& w) {
  if (w.expect == Write::Expect::kAbsent)
    return {{"target", "CREATE"},
            {"result", "EQUAL"},
            {"key", Base64Encode(key)},
            {"create_revision", "0"}};
  return {{"target", "MOD"},
          {"result", "EQUAL"},
          {"key", Base64Encode(key)},
          {"mod_revision", std::to_string(w.expected_revision)}};
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
      const EtcdJson request = {{"create_request",
                                 {{"key", Base64Encode(store_.prefix())},
                                  {"range_end", Base64Encode(PrefixEnd(store_.prefix()))},
                                  {"start_revision", std::to_string(next_)}}}};
      // A broken stream is resumed below; only a loss ends the feed.
      (void)store_.client().Stream("/v3/watch", request, handle_,
                                   [&](const EtcdJson& m) { return Receive(m, &lost); });
      if (!lost.empty()) {
        sink_.lost(Status::Unavailable(lost));
        return;
      }
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; });
    }
  }

  bool Receive(const EtcdJson& message, std::string* lost) {
    if (Stopping()) return false;
    if (!message.contains("result")) return false;  // a stream error: reconnect
    const EtcdJson& result = message["result"];
    if (const int64_t compacted = EtcdInt(result, "compact_revision"); compacted != 0) {
      *lost = "etcd compacted the history up to revision " + std::to_string(compacted) +
              ", past revision " + std::to_string(next_) + " that the watch needed";
      return false;
    }
    if (result.value("canceled", false)) {
      *lost =
          "etcd cancelled the watch: " + result.value("cancel_reason", std::string("no reason"));
      return false;
    }
    auto events = result.find("events");
    if (events == result.end() || !events->is_array()) return true;
    std::vector<Change> changes;
    int64_t at = 0;
    for (const EtcdJson& event : *events) {
      const EtcdJson& kv = event["kv"];
      const int64_t revision = EtcdInt(kv, "mod_revision");
      if (revision != at && !changes.empty()) {
        Deliver(at, std::move(changes));
        changes.clear();
      }
      at = revision;
      std::optional<std::string> key = Base64Decode(kv.value("key", std::string()));
      std::optional<std::pair<std::string, std::string>> name;
      if (key) name = store_.Split(*key);
      if (!name) continue;
      Change change{Write::Op::kPut, std::move(name->first), std::move(name->second), "", revision};
      if (event.value("type", std::string("PUT")) == "DELETE") {
        change.op = Write::Op::kDelete;
      } else {
        change.body = Base64Decode(kv.value("value", std::string())).value_or("");
      }
      changes.push_back(std::move(change));
    }
    if (!changes.empty()) Deliver(at, std::move(changes));
    return true;
  }

  void Deliver(int64_t revision, std::vector<Change> changes) {
    next_ = revision + 1;
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
  Result<EtcdJson> answer = store->client_->Call(
      "/v3/kv/range", {{"key", Base64Encode(store->options_.prefix)}, {"count_only", true}}, true);
  if (!answer.ok()) return answer.status();
  store->Saw(*answer);
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

void EtcdStore::Saw(const EtcdJson& answer) const {
  const int64_t seen = EtcdInt(answer.value("header", EtcdJson::object()), "revision");
  int64_t known = revision_.load();
  while (seen > known && !revision_.compare_exchange_weak(known, seen)) {
  }
}

Store::BatchLimits EtcdStore::batch_limits() const {
  // Bodies travel base64-encoded (4/3) inside JSON; leave room for framing.
  return {options_.max_txn_ops, (options_.max_request_bytes - (1 << 16)) / 4 * 3};
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
  EtcdJson compares = EtcdJson::array(), reads = EtcdJson::array();
  const Write* failed = nullptr;
  int64_t failed_actual = 0;
  for (const Write& w : writes) {
    const std::string key = Key(w.kind, w.id);
    KeyState& k = keys[key];
    if (w.expect != Write::Expect::kAnything) {
      if (k.state == KeyState::kUnknown) {
        compares.push_back(EtcdCompare(key, w));
        reads.push_back({{"request_range", {{"key", Base64Encode(key)}, {"keys_only", true}}}});
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
  EtcdJson success = EtcdJson::array();
  if (failed == nullptr)
    for (const auto& [key, k] : keys) {
      if (k.last == nullptr) continue;
      if (k.last->op == Write::Op::kPut)
        success.push_back(
            {{"request_put", {{"key", Base64Encode(key)}, {"value", Base64Encode(k.last->body)}}}});
      else
        success.push_back({{"request_delete_range", {{"key", Base64Encode(key)}}}});
    }
  const EtcdJson txn = {{"compare", compares}, {"success", success}, {"failure", reads}};
  const BatchLimits limits = batch_limits();
  if (success.size() > limits.writes || compares.size() > limits.writes ||
      txn.dump().size() + (1 << 16) > options_.max_request_bytes)
    return Status::InvalidArgument(
        "a batch of " + std::to_string(writes.size()) +
        " writes is more than one etcd transaction takes (--max-txn-ops " +
        std::to_string(options_.max_txn_ops) + ", --max-request-bytes " +
        std::to_string(options_.max_request_bytes) + ")");
  Result<EtcdJson> answer = Send(txn, keys);
  if (!answer.ok()) return answer.status();
  Saw(*answer);
  if (answer->value("succeeded", false)) {
    if (failed != nullptr) return PreconditionFailed(*failed, failed_actual);
    return EtcdInt((*answer)["header"], "revision");
  }
  // Replay the batch on the stored revisions read in the same transaction.
  std::map<std::string, int64_t> stored;
  for (const EtcdJson& response : answer->value("responses", EtcdJson::array()))
    for (const EtcdJson& kv : response["response_range"].value("kvs", EtcdJson::array()))
      stored[Base64Decode(kv.value("key", std::string())).value_or("")] =
          EtcdInt(kv, "mod_revision");
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
Result<EtcdJson> EtcdStore::Send(const EtcdJson& txn, const std::map<std::string, KeyState>& keys) {
  bool unknown = false;
  Result<EtcdJson> answer = client_->Call("/v3/kv/txn", txn, false, &unknown);
  const auto deadline = std::chrono::steady_clock::now() + options_.client.retry_for;
  while (!answer.ok() && unknown && std::chrono::steady_clock::now() < deadline) {
    Result<std::optional<int64_t>> applied = AppliedAt(keys);
    if (applied.ok() && applied->has_value())
      return EtcdJson{{"header", {{"revision", std::to_string(**applied)}}}, {"succeeded", true}};
    if (applied.ok()) answer = client_->Call("/v3/kv/txn", txn, false, &unknown);
  }
  return answer;
}

// The revision at which every put of `keys` holds its value and every
// delete is absent; nullopt when they do not.
Result<std::optional<int64_t>> EtcdStore::AppliedAt(const std::map<std::string, KeyState>& keys) {
  EtcdJson reads = EtcdJson::array();
  for (const auto& [key, k] : keys)
    if (k.last != nullptr) reads.push_back({{"request_range", {{"key", Base64Encode(key)}}}});
  Result<EtcdJson> answer = client_->Call("/v3/kv/txn", {{"success", reads}}, true);
  if (!answer.ok()) return answer.status();
  int64_t revision = 0;
  size_t i = 0;
  const EtcdJson responses = answer->value("responses", EtcdJson::array());
  for (const auto& [key, k] : keys) {
    if (k.last == nullptr) continue;
    if (i >= responses.size()) return std::optional<int64_t>();
    const EtcdJson kvs = responses[i++]["response_range"].value("kvs", EtcdJson::array());
    const bool put = k.last->op == Write::Op::kPut;
    if (kvs.empty() == put) return std::optional<int64_t>();
    if (put && Base64Decode(kvs[0].value("value", std::string())) != k.last->body)
      return std::optional<int64_t>();
    if (put) revision = std::max(revision, EtcdInt(kvs[0], "mod_revision"));
  }
  if (revision == 0) revision = EtcdInt((*answer)["header"], "revision");
  return std::optional<int64_t>(revision);
}

Result<std::vector<StoredObject>> EtcdStore::Range(const std::string& from, const std::string& to,
                                                   int64_t at, int64_t* revision) const {
  std::vector<StoredObject> out;
  std::string next = from;
  for (;;) {
    EtcdJson request = {{"key", Base64Encode(next)},
                        {"range_end", Base64Encode(to)},
                        {"limit", std::to_string(options_.page_size)}};
    if (at != 0) request["revision"] = std::to_string(at);
    Result<EtcdJson> answer = client_->Call("/v3/kv/range", request, true);
    if (!answer.ok()) return answer.status();
    Saw(*answer);
    if (at == 0) at = EtcdInt((*answer)["header"], "revision");
    std::string last;
    for (const EtcdJson& kv : answer->value("kvs", EtcdJson::array())) {
      std::optional<std::string> key = Base64Decode(kv.value("key", std::string()));
      std::optional<std::string> value = Base64Decode(kv.value("value", std::string()));
      if (!key || !value) return Status::Internal("etcd sent a key or value that is not base64");
      std::optional<std::pair<std::string, std::string>> name = Split(*key);
      if (name)
        out.push_back({std::move(name->first), std::move(name->second), std::move(*value),
                       EtcdInt(kv, "mod_revision")});
      last = std::move(*key);
    }
    if (!answer->value("more", false) || last.empty()) break;
    next = last + '\0';
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

Status EtcdStore::Compact(int64_t revision) {
  Result<EtcdJson> answer =
      client_->Call("/v3/kv/compaction", {{"revision", std::to_string(revision)}});
  if (!answer.ok()) return answer.status();
  Saw(*answer);
  return Status::Ok();
}

}  // namespace berth::store
