// ReadCache: every object of some kinds of a shared store (etcd), held in
// memory and kept current by the store's change feed, so that a list is
// answered from memory instead of from pages of etcd keys (Kubernetes'
// watch cache). Each berthd replica has its own (WatchedStore::CacheReads).
//
// Reads stay linearizable: the caller first reads the store's latest
// revision (ChangeFeed::LatestRevision, one small round trip) and the cache
// answers once it has applied every commit up to it, so a list sees every
// write acknowledged before it was asked, whichever replica made it. That
// relies on etcd's revisions coming from writes under Berth's prefix. A
// write outside it (another program, another Berth on its own prefix)
// raises etcd's revision past anything the feed brings; so the wait is
// bounded, a cache not there in time answers nothing (the caller reads the
// store), and until the feed passes the revision it waited for in vain,
// reads do not wait at all: on a shared etcd the cache then costs one
// bounded wait per burst of foreign writes, and otherwise reads as without
// it.
//
// The cache lists its kinds at one revision and follows the feed from
// there (ChangeFeed's list-then-watch). When the feed is lost (etcd
// compacted past it), the cache answers nothing until a read lists again.
//
// Thread-safe: reads share the objects; the feed's thread applies changes
// alone.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "store/change_feed.h"

namespace berth::store {

class ReadCache {
 public:
  ReadCache(ChangeFeed& feed, std::vector<std::string> kinds);
  ~ReadCache();
  ReadCache(const ReadCache&) = delete;
  ReadCache& operator=(const ReadCache&) = delete;

  bool Holds(std::string_view kind) const { return kinds_.contains(kind); }

  // The objects of `kind` (one it holds) whose id starts with `prefix`, in
  // id order, once the cache has applied revision `at_least`; nullopt when
  // it has not within `wait` (real time), or cannot follow the feed. The
  // first read, and the first after the feed was lost, lists the kinds.
  std::optional<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                                      std::string_view prefix, int64_t at_least,
                                                      Duration wait);

  // The revision applied last (0 before the first list).
  int64_t revision() const;
  // Lists answered from memory, and times the kinds were listed.
  uint64_t served() const { return served_; }
  uint64_t lists() const { return lists_; }

 private:
  using Objects = std::map<std::string, StoredObject, std::less<>>;  // by id
  // Lists the kinds and follows the feed when not following it: false when
  // the list failed. Called by readers; one lists at a time.
  bool EnsureFollowing();
  void Apply(int64_t revision, std::vector<Change> changes);  // the feed's thread
  void Lost();                                                // the feed's thread

  ChangeFeed& feed_;
  const std::set<std::string, std::less<>> kinds_;
  std::mutex start_mu_;  // one reader lists at a time; guards following_
  mutable std::shared_mutex mu_;
  std::condition_variable_any applied_cv_;
  std::map<std::string, Objects, std::less<>> objects_;  // by kind
  int64_t revision_ = 0;
  bool following_ok_ = false;           // listed and the feed not lost
  std::atomic<int64_t> waited_for_{0};  // a revision a read waited for in vain
  std::atomic<uint64_t> served_{0}, lists_{0};
  std::unique_ptr<ChangeFeed::Following> following_;  // last: stopped first
};

}  // namespace berth::store
