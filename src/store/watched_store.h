// WatchedStore: a Store that also tells one reader what changed. It wraps
// another Store; once Watch was called, TakeChanges hands out every
// successful commit's changes in revision order. berthd's control loop reads
// the whole state once (Watch) and afterwards only what changed, so a pass
// costs what changed, not the size of the cluster.
//
// Where the changes come from:
//  - A store that only this process writes (SQLite, MemoryStore): the
//    commits made through this object, recorded as they return. berthd holds
//    its data directory's lock, so there is no other writer.
//  - A shared store (a ChangeFeed: etcd, written by every berthd replica):
//    the feed, which Watch lists at one revision and then follows. If the
//    feed is lost (etcd compacted what it still had to send), lost() turns
//    true and the reader calls Watch again.
// Changes to kinds the reader did not ask for are not kept.
//
// The reader's own writes (CommitOwn: a pass's tasks) are not handed back to
// it, so a pass of 100,000 tasks does not copy them into the change log.
// CommitOwn also splits a batch the store cannot take at once
// (Store::batch_limits) and puts the fence in front of each part.
//
// Group commit: on a shared store every Commit is a consensus round (etcd:
// a raft proposal, an fsync on each member, a gRPC call), so Commit calls
// made at once from many threads are gathered into one commit of the inner
// store, fenced once, as many as its batch limits allow. Each caller still
// gets its own answer: all of a group's batches apply at one revision, and
// when the group is refused (one batch's precondition failed, or one batch
// is malformed) it is committed again in halves, down to that batch alone,
// so the others apply and the refused one gets its own error. The group
// keeps the batches in the order they were queued (the reader's own batch,
// from CommitOwn, first), so a later batch's precondition sees an earlier
// one's writes, as if they had been committed one after the other. An API
// batch that writes an object the reader's batch writes waits for the next
// group.
//
// Thread-safe: every method may be called from any thread. With a local
// store, commits run concurrently (the wrapped store may group them) but not
// during Watch, so a snapshot and the changes after it neither overlap nor
// leave a gap; TakeChanges holds back changes that follow a commit not yet
// recorded. The reader (Watch, TakeChanges, CommitOwn, lost) is one thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "core/histogram.h"
#include "core/time.h"
#include "store/change_feed.h"
#include "store/read_cache.h"
#include "store/shared_feed.h"
#include "store/store.h"

namespace berth::store {

class WatchedStore final : public Store {
 public:
  static constexpr size_t kPartsInFlight = 8;
  // How many group commits run at once on a shared store: etcd pipelines
  // them (docs/benchmarks.md, "Group commit on etcd").
  static constexpr size_t kGroupsInFlight = 1;

  // Shares ownership of `inner`: berthd's tests may keep a handle on it.
  // Commit groups batches (see above) on a shared store, kGroupsInFlight
  // groups at a time; a local store (SQLite groups its own commits, with a
  // revision each) gets every Commit alone.
  explicit WatchedStore(std::shared_ptr<Store> inner);
  // As above, with `groups_in_flight` group commits at a time on any store
  // (0: no grouping), for tests.
  WatchedStore(std::shared_ptr<Store> inner, size_t groups_in_flight);
  ~WatchedStore() override;

  Result<int64_t> Commit(const std::vector<Write>& writes) override;
  Result<std::optional<StoredObject>> Get(std::string_view kind,
                                          std::string_view id) const override {
    return inner_->Get(kind, id);
  }
  Result<std::vector<StoredObject>> List(std::string_view kind) const override {
    return ListPrefix(kind, "");
  }
  // From the read cache when it holds `kind` (CacheReads), else the store.
  Result<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                               std::string_view prefix) const override;
  int64_t revision() const override { return inner_->revision(); }
  // What one Commit through this object takes: the inner store's limits,
  // less room for the fence when one is set (kFenceRoom bytes, one write).
  BatchLimits batch_limits() const override;
  static constexpr size_t kFenceRoom = 1024;

  // Every object of `kinds` (one list per kind, in the order given), and
  // from now on the changes to those kinds; forgets changes not yet taken.
  Result<std::vector<std::vector<StoredObject>>> Watch(std::vector<std::string> kinds);
  // The changes since Watch or the last call, in commit order.
  std::vector<Change> TakeChanges();
  // A shared store's feed was lost: Watch again.
  bool lost() const;
  // How many Watch calls listed the state.
  uint64_t lists() const { return lists_.load(); }
  // Called (on the feed's thread) when a shared store's feed brought a
  // change or was lost: berthd wakes its control loop. Set before Watch.
  void OnChange(std::function<void()> on_change) { on_change_ = std::move(on_change); }
  // Waits until the feed has brought every commit up to `revision` (at once
  // for a local store); false on timeout (real time).
  bool WaitDelivered(int64_t revision, Duration timeout);

  // Every commit from now on starts with `fence()` (a leader's Check, see
  // daemon/leadership.h); a commit refused by it fails as Unavailable
  // ("no longer leads"). Set before the first commit.
  void SetFence(std::function<std::vector<Write>()> fence) { fence_ = std::move(fence); }

  // With a shared store: lists of `kinds` are answered from memory by a
  // ReadCache (read_cache.h) once it has applied the store's latest
  // revision, waiting up to kCacheWait for it, else by the store (see
  // ReadCache for a revision that never comes). Single objects are still
  // read from the store (a round trip either way). Call once, before the
  // first read; does nothing on a local store.
  void CacheReads(std::vector<std::string> kinds);
  static constexpr Duration kCacheWait{1000};
  const ReadCache* read_cache() const { return cache_.get(); }

  // Hands every commit of the store from now on to `sink`, in revision
  // order, one call at a time: its writes of the kinds `wanted` takes (the
  // last `keep_last` of them, and how many were cut), whoever made them.
  //  - A local store: the commits made through this object (Commit and
  //    CommitOwn alike), on the committing thread, held back while an
  //    earlier revision's commit is still under way.
  //  - A shared store: the store's feed, on the feed's thread.
  // `missed` is called with the last revision not handed: the store's
  // revision when following starts, and after the feed was lost (etcd
  // compacted what it still had to send) the one FollowCommits follows
  // again from. Call once, before anything commits; the sink must not call
  // back. ClearCommitSink stops it (before what the sink uses goes).
  struct CommitSink {
    std::function<bool(std::string_view kind)> wanted;
    size_t keep_last = 0;
    std::function<void(int64_t revision, const std::vector<Change>& changes, size_t cut)> changed;
    std::function<void(int64_t through)> missed;
  };
  Status SetCommitSink(CommitSink sink);
  // On a shared store, follows the feed again when it was lost (cheap when
  // it was not).
  Status FollowCommits();
  void ClearCommitSink();

  // How many commits of the inner store carried Commit's batches (with a
  // CommitOwn batch or not), and how many of those batches there were
  // (equal without grouping).
  uint64_t groups_committed() const { return groups_.load(); }
  uint64_t batches_committed() const { return batches_.load(); }
  // How long each commit of the inner store took (a group, or a part of
  // CommitOwn's): an fsync on SQLite, a raft round on etcd.
  const Histogram& commit_durations() const { return commit_durations_; }
  // Commit calls waiting for a group to take them.
  size_t queued() const;

  // Commits as Commit does, but TakeChanges will not hand these writes out:
  // for the reader's own writes, which it holds already. On a shared store a
  // batch that fits one commit joins the group commit at the front of the
  // queue: a small pass shares a transaction with the API's writes instead
  // of taking one of its own. A batch too large for one Commit is split
  // (each part fenced) and kPartsInFlight parts are committed at a time,
  // each atomically: the parts must not depend on each other's order (a
  // pass's task writes do not). A failure leaves other parts committed: the
  // reader then reads the state again. Returns the highest revision of the
  // parts. When the batch was split, `revisions` (if given) gets each
  // write's own revision, in the order of `writes` (the reader's next
  // preconditions need them); else it is left empty.
  Result<int64_t> CommitOwn(const std::vector<Write>& writes,
                            std::vector<int64_t>* revisions = nullptr);

 private:
  struct Queued;  // a Commit call waiting for its group
  // The batches at the front of the queue that one commit of the inner
  // store takes (at least one). queue_mu_ held.
  std::vector<Queued*> TakeGroup();
  void CommitGroup(const std::vector<Queued*>& group);
  void CommitOrSplit(std::span<Queued* const> group, const std::vector<Write>& fence);
  // Queues `mine` and waits until a group (led by this caller or another)
  // committed it.
  void Enqueue(Queued& mine);
  // Marks what the group's own batch (CommitOwn's) wrote at `revision`, so
  // TakeChanges does not hand it back.
  void MarkOwn(std::span<Queued* const> group, int64_t revision);
  // One batch (starting with `fence`); `own`: not handed out.
  Result<int64_t> CommitPart(const std::vector<Write>& batch, const std::vector<Write>& fence,
                             bool own);
  // Commits `writes` (which start with `fence`) on the inner store.
  Result<int64_t> CommitFenced(const std::vector<Write>& writes, const std::vector<Write>& fence);
  // Keeps the last sink_.keep_last of `changes` (what sink_ wants of
  // them); how many were cut.
  size_t TrimForSink(std::vector<Change>& changes) const;
  // A local commit at `revision` (0: it failed or threw) leaves the flight.
  void SinkLocal(int64_t revision, std::vector<Change> changes, size_t cut);
  void Received(int64_t revision, std::vector<Change> changes);  // the feed's thread
  void Lost();                                                   // the feed's thread

  std::shared_ptr<Store> inner_;
  // One follow of inner_'s feed for this store's readers (the loop's
  // changes, the commit sink, the read cache), when inner_ is shared.
  std::unique_ptr<SharedFeed> shared_feed_;
  ChangeFeed* feed_ = nullptr;  // shared_feed_, when there is one
  std::function<void()> on_change_;
  std::function<std::vector<Write>()> fence_;
  const size_t groups_in_flight_;
  mutable std::mutex queue_mu_;  // guards queue_ and leading_
  std::condition_variable group_done_;
  std::vector<Queued*> queue_;  // Commit calls not yet in a group, oldest first
  size_t leading_ = 0;          // groups being committed
  std::atomic<uint64_t> groups_{0}, batches_{0};
  Histogram commit_durations_;
  std::shared_mutex commit_mu_;  // local commits share it; Watch takes it alone
  mutable std::mutex changes_mu_;
  std::condition_variable delivered_cv_;
  std::set<std::string, std::less<>> watched_;
  bool watching_ = false;
  bool lost_ = false;
  int64_t next_revision_ = 0;  // local: the next one TakeChanges hands out
  int64_t delivered_ = 0;      // shared: the feed's last revision
  // Shared: what CommitOwn wrote at a revision, not to be handed back: all
  // of it (a part of its own), or the keys ("kind/id") of its batch in a
  // group with API writes.
  struct Own {
    bool all = false;
    std::set<std::string, std::less<>> keys = {};
  };
  std::map<int64_t, Own> own_;
  std::map<int64_t, std::vector<Change>> changes_;  // by revision (empty: nothing watched)
  std::atomic<uint64_t> lists_{0};
  CommitSink sink_;     // set before any commit, then only read
  std::mutex sink_mu_;  // guards what follows, and calls sink_ one at a time
  bool sink_cleared_ = false;
  size_t sink_in_flight_ = 0;  // local commits under way
  int64_t sink_next_ = 0;      // local: the next revision handed
  struct Held {
    std::vector<Change> changes;
    size_t cut = 0;
  };
  std::map<int64_t, Held> sink_pending_;        // local: held back, by revision
  std::atomic<bool> sink_following_ok_{false};  // shared: following, and not lost
  std::unique_ptr<ChangeFeed::Following> sink_following_;
  std::unique_ptr<ReadCache> cache_;                  // shared store only
  std::unique_ptr<ChangeFeed::Following> following_;  // last: stopped first
};

}  // namespace berth::store
