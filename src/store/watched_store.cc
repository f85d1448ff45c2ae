#include "store/watched_store.h"

#include <cstddef>
#include <thread>

namespace berth::store {

namespace {

// Refusals of one batch rather than of the store: a group refused so is
// split until only the batch that caused it is refused.
bool RefusesBatch(const Status& status) {
  return status.code() == StatusCode::kConflict || status.code() == StatusCode::kInvalidArgument;
}

// How the reader's own writes are told apart by object.
std::string ObjectKey(std::string_view kind, std::string_view id) {
  return std::string(kind) + "/" + std::string(id);
}

}  // namespace

struct WatchedStore::Queued {
  const std::vector<Write>* writes;
  bool own = false;                                 // CommitOwn's: not handed back to the reader
  std::set<std::string, std::less<>> objects = {};  // own: what it writes, ObjectKey
  size_t bytes = 0;
  Result<int64_t> result = Status::Unavailable("not committed");
  bool done = false;
};

WatchedStore::WatchedStore(std::shared_ptr<Store> inner)
    : WatchedStore(inner, dynamic_cast<ChangeFeed*>(inner.get()) != nullptr ? kGroupsInFlight : 0) {
}

WatchedStore::WatchedStore(std::shared_ptr<Store> inner, size_t groups_in_flight)
    : inner_(std::move(inner)), groups_in_flight_(groups_in_flight) {
  if (auto* feed = dynamic_cast<ChangeFeed*>(inner_.get())) {
    shared_feed_ = std::make_unique<SharedFeed>(*feed);
    feed_ = shared_feed_.get();
  }
}

WatchedStore::~WatchedStore() {
  following_.reset();
  ClearCommitSink();
}

Result<int64_t> WatchedStore::Commit(const std::vector<Write>& writes) {
  if (writes.empty()) return inner_->Commit(writes);
  Queued mine{&writes};
  if (groups_in_flight_ == 0) {
    CommitGroup({&mine});
    return std::move(mine.result);
  }
  Enqueue(mine);
  return std::move(mine.result);
}

// A caller queues its batch; while fewer than groups_in_flight_ groups are
// being committed, a waiting caller leads the next group: the batches at the
// front of the queue that fit one commit, its own among them or not. It
// returns once its own batch was committed by whichever group took it.
void WatchedStore::Enqueue(Queued& mine) {
  for (const Write& w : *mine.writes) mine.bytes += WriteBytes(w);
  std::unique_lock lock(queue_mu_);
  // The reader's batch goes first: the control loop commits one pass at a
  // time, and a wait behind every API write queued meanwhile would hold up
  // every placement after it.
  if (mine.own)
    queue_.insert(queue_.begin(), &mine);
  else
    queue_.push_back(&mine);
  while (!mine.done) {
    if (leading_ == groups_in_flight_ || queue_.empty()) {
      group_done_.wait(lock);  // our batch is queued or in a group in flight
      continue;
    }
    ++leading_;
    const std::vector<Queued*> group = TakeGroup();
    lock.unlock();
    CommitGroup(group);
    lock.lock();
    --leading_;
    for (Queued* q : group) q->done = true;
    group_done_.notify_all();
  }
}

size_t WatchedStore::queued() const {
  std::lock_guard lock(queue_mu_);
  return queue_.size();
}

// A group ends before an API batch that writes an object the reader's batch
// writes: in one transaction the API's write would be what the store keeps,
// at the revision the reader records for its own, and the reader's next
// precondition on that object would pass over a write it never read.
std::vector<WatchedStore::Queued*> WatchedStore::TakeGroup() {
  const BatchLimits limits = batch_limits();  // what is left beside the fence
  size_t writes = 0, bytes = 0, taken = 0;
  const std::set<std::string, std::less<>>* owns = nullptr;  // the reader's objects
  const auto writes_owned = [&](const Queued* q) {
    return std::any_of(q->writes->begin(), q->writes->end(), [&](const Write& w) {
      return w.op != Write::Op::kCheck && owns->contains(ObjectKey(w.kind, w.id));
    });
  };
  for (const Queued* q : queue_) {
    const bool fits = (limits.writes == 0 || writes + q->writes->size() <= limits.writes) &&
                      (limits.bytes == 0 || bytes + q->bytes <= limits.bytes);
    if (taken > 0 && (!fits || (owns != nullptr && writes_owned(q)))) break;
    if (q->own) owns = &q->objects;
    writes += q->writes->size(), bytes += q->bytes, ++taken;
  }
  std::vector<Queued*> group(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(taken));
  return group;
}

void WatchedStore::CommitGroup(const std::vector<Queued*>& group) {
  batches_ += static_cast<uint64_t>(
      std::count_if(group.begin(), group.end(), [](const Queued* q) { return !q->own; }));
  try {
    CommitOrSplit(group, fence_ ? fence_() : std::vector<Write>());
  } catch (const std::exception& e) {  // every caller must be answered
    for (Queued* q : group) q->result = Status::Internal(std::string("commit failed: ") + e.what());
  }
}

// A refused group is split in halves, the first committed before the
// second, down to the batch that was refused: one refusal among n batches
// costs about 2 log2(n) more commits, not n.
void WatchedStore::CommitOrSplit(std::span<Queued* const> group, const std::vector<Write>& fence) {
  std::vector<Write> batch = fence;
  for (const Queued* q : group) batch.insert(batch.end(), q->writes->begin(), q->writes->end());
  if (std::any_of(group.begin(), group.end(), [](const Queued* q) { return !q->own; })) ++groups_;
  const Result<int64_t> revision = CommitPart(batch, fence, false);
  if (group.size() == 1 || revision.ok() || !RefusesBatch(revision.status())) {
    if (revision.ok()) MarkOwn(group, *revision);
    for (Queued* q : group) q->result = revision;
    return;
  }
  const size_t half = group.size() / 2;
  CommitOrSplit(group.first(half), fence);
  CommitOrSplit(group.subspan(half), fence);
}

// Before the group's callers are answered, so the reader (whose CommitOwn is
// one of them) finds the mark when it next takes changes. No API batch of
// the group wrote the reader's objects (TakeGroup). A group without a put
// may have made no revision of its own: nothing is marked then, and its
// deletes coming back do no harm.
void WatchedStore::MarkOwn(std::span<Queued* const> group, int64_t revision) {
  const auto is_put = [](const Write& w) { return w.op == Write::Op::kPut; };
  bool own = false, puts = false;
  for (const Queued* q : group) {
    own = own || q->own;
    puts = puts || std::any_of(q->writes->begin(), q->writes->end(), is_put);
  }
  if (!own || !puts) return;
  std::lock_guard lock(changes_mu_);
  Own& marked = own_[revision];
  for (const Queued* q : group)
    if (q->own) marked.keys.insert(q->objects.begin(), q->objects.end());
}

void WatchedStore::CacheReads(std::vector<std::string> kinds) {
  if (feed_ != nullptr) cache_ = std::make_unique<ReadCache>(*feed_, std::move(kinds));
}

Result<std::vector<StoredObject>> WatchedStore::ListPrefix(std::string_view kind,
                                                           std::string_view prefix) const {
  if (cache_ != nullptr && cache_->Holds(kind)) {
    const Result<int64_t> latest = feed_->LatestRevision();
    if (latest.ok())
      if (std::optional<std::vector<StoredObject>> listed =
              cache_->ListPrefix(kind, prefix, *latest, kCacheWait))
        return std::move(*listed);
  }
  return inner_->ListPrefix(kind, prefix);
}

Store::BatchLimits WatchedStore::batch_limits() const {
  BatchLimits limits = inner_->batch_limits();
  if (!fence_) return limits;
  if (limits.writes != 0) limits.writes = std::max<size_t>(limits.writes, 2) - 1;
  if (limits.bytes != 0) limits.bytes = std::max(limits.bytes, 2 * kFenceRoom) - kFenceRoom;
  return limits;
}

Result<int64_t> WatchedStore::CommitOwn(const std::vector<Write>& writes,
                                        std::vector<int64_t>* revisions) {
  if (revisions != nullptr) revisions->clear();
  const std::vector<Write> fence = fence_ ? fence_() : std::vector<Write>();
  if (writes.empty()) return inner_->Commit(writes);
  const BatchLimits limits = inner_->batch_limits();
  // Nothing to add and no limit to split at (SQLite): the batch goes as it
  // is. A copy of 100,000 replicas' bodies is some 30 MB and its page faults
  // (docs/benchmarks.md, "The pass's batch uncopied").
  if (fence.empty() && limits.writes == 0 && limits.bytes == 0)
    return CommitPart(writes, fence, true);
  const std::vector<std::vector<size_t>> parts = inner_->PartsForCommit(writes, fence);
  if (parts.size() == 1 && feed_ != nullptr && groups_in_flight_ > 0) {
    Queued mine{&writes, true};
    for (const Write& w : writes)
      if (w.op != Write::Op::kCheck) mine.objects.insert(ObjectKey(w.kind, w.id));
    Enqueue(mine);
    return std::move(mine.result);
  }
  if (parts.size() == 1) return CommitPart(Gather(writes, parts.front(), fence), fence, true);
  // The parts are independent (each fenced, each atomic), so several go at
  // once: etcd then shares a consensus round and a disk sync among them.
  if (revisions != nullptr) revisions->assign(writes.size(), 0);
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status failed = Status::Ok();
  int64_t last = 0;
  std::vector<std::thread> senders;
  for (size_t t = 0; t < std::min(kPartsInFlight, parts.size()); ++t)
    senders.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < parts.size();) {
        Result<int64_t> revision = CommitPart(Gather(writes, parts[i], fence), fence, true);
        std::lock_guard lock(mu);
        if (!revision.ok()) {
          if (failed.ok()) failed = revision.status();
          next = parts.size();  // send no more
        } else {
          last = std::max(last, *revision);
          if (revisions != nullptr)
            for (size_t w : parts[i]) (*revisions)[w] = *revision;
        }
      }
    });
  for (std::thread& sender : senders) sender.join();
  if (!failed.ok()) return failed;
  return last;
}

Result<int64_t> WatchedStore::CommitPart(const std::vector<Write>& batch,
                                         const std::vector<Write>& fence, bool own) {
  if (feed_ != nullptr) {
    Result<int64_t> revision = CommitFenced(batch, fence);
    // A part without a put may have changed nothing, and so have no
    // revision of its own; its deletes coming back do no harm.
    const bool puts = std::any_of(batch.begin(), batch.end(),
                                  [](const Write& w) { return w.op == Write::Op::kPut; });
    if (revision.ok() && own && puts) {
      std::lock_guard lock(changes_mu_);
      own_[*revision].all = true;
    }
    return revision;
  }
  std::shared_lock commit(commit_mu_);
  // Leaves the flight however the commit ends (an exception included).
  struct InFlight {
    WatchedStore* store;
    int64_t revision = 0;
    std::vector<Change> changes = {};
    size_t cut = 0;
    ~InFlight() {
      if (store) store->SinkLocal(revision, std::move(changes), cut);
    }
  } in_flight{sink_.changed ? this : nullptr};
  if (in_flight.store) {
    std::lock_guard lock(sink_mu_);
    ++sink_in_flight_;
  }
  Result<int64_t> revision = CommitFenced(batch, fence);
  if (in_flight.store && revision.ok()) {
    in_flight.revision = *revision;
    const auto wanted = [this](const Write& w) {
      return w.op != Write::Op::kCheck && sink_.wanted(w.kind);
    };
    const auto count = static_cast<size_t>(std::count_if(batch.begin(), batch.end(), wanted));
    // Only the kept ones are copied: a pass's 100,000 tasks are not.
    size_t skip = in_flight.cut = count > sink_.keep_last ? count - sink_.keep_last : 0;
    for (const Write& w : batch) {
      if (!wanted(w) || (skip > 0 && skip--)) continue;
      in_flight.changes.push_back(
          {w.op, w.kind, w.id, w.op == Write::Op::kPut ? w.body : "", *revision});
    }
  }
  if (!revision.ok()) return revision;
  std::lock_guard lock(changes_mu_);
  if (!watching_) return revision;
  std::vector<Change>& changes = changes_[*revision];  // recorded even when empty
  if (own) return revision;
  for (const Write& w : batch)
    if (w.op != Write::Op::kCheck && watched_.contains(w.kind))
      changes.push_back({w.op, w.kind, w.id, w.body, *revision});
  return revision;
}

Result<int64_t> WatchedStore::CommitFenced(const std::vector<Write>& writes,
                                           const std::vector<Write>& fence) {
  const auto start = std::chrono::steady_clock::now();
  Result<int64_t> revision = inner_->Commit(writes);
  commit_durations_.Observe(std::chrono::steady_clock::now() - start);
  if (revision.ok() || revision.status().code() != StatusCode::kConflict || fence.empty())
    return revision;
  const Write& check = fence.front();
  Result<std::optional<StoredObject>> now = inner_->Get(check.kind, check.id);
  if (now.ok() && now->has_value() && (*now)->revision == check.expected_revision)
    return revision;  // the fence held: another precondition failed
  return Status::Unavailable("this berthd no longer leads (its epoch " +
                             std::to_string(check.expected_revision) +
                             " ended), so it wrote nothing: send the request again");
}

Result<std::vector<std::vector<StoredObject>>> WatchedStore::Watch(std::vector<std::string> kinds) {
  ++lists_;
  if (feed_ != nullptr) {
    following_.reset();  // before the lists: nothing of the old feed arrives after them
    Result<Snapshot> snapshot = feed_->ListAtOneRevision(kinds);
    if (!snapshot.ok()) return snapshot.status();
    {
      std::lock_guard lock(changes_mu_);
      watched_ = {kinds.begin(), kinds.end()};
      watching_ = true;
      lost_ = false;
      delivered_ = snapshot->revision;
      own_.clear();
      changes_.clear();
    }
    following_ =
        feed_->Follow(snapshot->revision, {[this](int64_t revision, std::vector<Change> changes) {
                                             Received(revision, std::move(changes));
                                           },
                                           [this](const Status&) { Lost(); }});
    return std::move(snapshot->kinds);
  }
  std::unique_lock commit(commit_mu_);
  std::vector<std::vector<StoredObject>> objects;
  for (const std::string& kind : kinds) {
    Result<std::vector<StoredObject>> listed = inner_->List(kind);
    if (!listed.ok()) return listed.status();
    objects.push_back(std::move(*listed));
  }
  std::lock_guard lock(changes_mu_);
  watched_ = {kinds.begin(), kinds.end()};
  watching_ = true;
  next_revision_ = inner_->revision() + 1;
  changes_.clear();
  return objects;
}

Status WatchedStore::SetCommitSink(CommitSink sink) {
  sink_ = std::move(sink);
  if (feed_ != nullptr) return FollowCommits();
  std::lock_guard lock(sink_mu_);
  sink_next_ = inner_->revision() + 1;
  if (sink_.missed) sink_.missed(sink_next_ - 1);
  return Status::Ok();
}

Status WatchedStore::FollowCommits() {
  if (feed_ == nullptr || !sink_.changed || sink_following_ok_) return Status::Ok();
  std::lock_guard lock(sink_mu_);
  if (sink_cleared_ || sink_following_ok_) return Status::Ok();
  sink_following_.reset();
  Result<int64_t> latest = feed_->LatestRevision();
  if (!latest.ok()) return latest.status();
  if (sink_.missed) sink_.missed(*latest);
  sink_following_ok_ = true;
  sink_following_ = feed_->Follow(
      *latest, {[this](int64_t revision, std::vector<Change> changes) {
                  std::erase_if(changes, [this](const Change& c) { return !sink_.wanted(c.kind); });
                  const size_t cut = TrimForSink(changes);
                  if (!changes.empty()) sink_.changed(revision, changes, cut);
                },
                [this](const Status&) { sink_following_ok_ = false; }});
  return Status::Ok();
}

void WatchedStore::ClearCommitSink() {
  std::lock_guard lock(sink_mu_);
  sink_cleared_ = true;
  sink_following_ok_ = true;  // FollowCommits does nothing from now on
  sink_following_.reset();
}

size_t WatchedStore::TrimForSink(std::vector<Change>& changes) const {
  if (changes.size() <= sink_.keep_last) return 0;
  const size_t cut = changes.size() - sink_.keep_last;
  changes.erase(changes.begin(), changes.begin() + static_cast<std::ptrdiff_t>(cut));
  return cut;
}

// Commits run concurrently: each waits in sink_pending_ until every earlier
// revision was handed, or nothing else is under way (a failed commit, or
// one that wrote nothing, leaves no revision to wait for).
void WatchedStore::SinkLocal(int64_t revision, std::vector<Change> changes, size_t cut) {
  std::lock_guard lock(sink_mu_);
  --sink_in_flight_;
  // A commit that wrote nothing has the revision of the last one that did:
  // it must not take that one's place.
  if (revision >= sink_next_) {
    Held& held = sink_pending_[revision];
    if (!changes.empty()) held = {std::move(changes), cut};
  }
  while (!sink_pending_.empty() &&
         (sink_pending_.begin()->first == sink_next_ || sink_in_flight_ == 0)) {
    auto first = sink_pending_.begin();
    if (!sink_cleared_ && !first->second.changes.empty())
      sink_.changed(first->first, first->second.changes, first->second.cut);
    sink_next_ = first->first + 1;
    sink_pending_.erase(first);
  }
}

void WatchedStore::Received(int64_t revision, std::vector<Change> changes) {
  {
    std::lock_guard lock(changes_mu_);
    delivered_ = std::max(delivered_, revision);
    std::erase_if(changes, [this](const Change& c) { return !watched_.contains(c.kind); });
    if (!changes.empty()) {
      std::vector<Change>& kept = changes_[revision];
      for (Change& c : changes) kept.push_back(std::move(c));
    }
  }
  delivered_cv_.notify_all();
  if (on_change_) on_change_();
}

void WatchedStore::Lost() {
  {
    std::lock_guard lock(changes_mu_);
    lost_ = true;
  }
  delivered_cv_.notify_all();
  if (on_change_) on_change_();
}

bool WatchedStore::lost() const {
  std::lock_guard lock(changes_mu_);
  return lost_;
}

bool WatchedStore::WaitDelivered(int64_t revision, Duration timeout) {
  if (feed_ == nullptr) return true;
  std::unique_lock lock(changes_mu_);
  return delivered_cv_.wait_for(lock, timeout,
                                [&] { return !watching_ || lost_ || delivered_ >= revision; });
}

std::vector<Change> WatchedStore::TakeChanges() {
  std::lock_guard lock(changes_mu_);
  std::vector<Change> out;
  if (feed_ != nullptr) {
    // The reader's own commits have all returned by now (it is one thread),
    // so every own revision is known.
    for (auto& [revision, changes] : changes_) {
      const auto own = own_.find(revision);
      for (Change& change : changes)
        if (own == own_.end() ||
            (!own->second.all && !own->second.keys.contains(ObjectKey(change.kind, change.id))))
          out.push_back(std::move(change));
      if (own != own_.end()) own_.erase(own);
    }
    changes_.clear();
    std::erase_if(own_, [this](const auto& own) { return own.first <= delivered_; });
    return out;
  }
  for (auto it = changes_.begin(); it != changes_.end() && it->first == next_revision_;
       it = changes_.erase(it), ++next_revision_)
    for (Change& change : it->second) out.push_back(std::move(change));
  return out;
}

}  // namespace berth::store
