// ChangeFeed: a Store whose state other processes change too (etcd, shared
// by several berthd replicas) says itself what changed, since no single
// process sees every commit. WatchedStore follows such a feed instead of
// recording its own commits.
//
// The contract, as the Kubernetes reflector's list-then-watch: List reads
// every object of some kinds at one revision R; Follow(R) then hands out
// every commit after R, once, in revision order, each commit's changes
// together; a feed that cannot go on from where it is (etcd compacted the
// revisions it still had to send) says so once through `lost`, and the
// reader lists again. A broken connection is not a loss: the feed resumes
// from the last revision it handed out.
//
// Thread-safe; the sink is called on the feed's own thread, one call at a
// time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace berth::store {

struct Change {
  Write::Op op = Write::Op::kPut;
  std::string kind, id, body;  // body: kPut only
  int64_t revision = 0;        // of the commit that made it
};

struct Snapshot {
  int64_t revision = 0;                          // every list was read at this revision
  std::vector<std::vector<StoredObject>> kinds;  // one list per kind asked for, by id
};

class ChangeFeed {
 public:
  virtual ~ChangeFeed() = default;

  // The store's latest revision, read linearizably (one small round trip):
  // a reader that waits until a feed has brought it sees every commit
  // acknowledged before it asked.
  virtual Result<int64_t> LatestRevision() = 0;

  // Every object of `kinds`, all at one revision.
  virtual Result<Snapshot> ListAtOneRevision(const std::vector<std::string>& kinds) = 0;

  struct Sink {
    // One commit's changes (every kind), with its revision.
    std::function<void(int64_t revision, std::vector<Change> changes)> changed;
    // The feed stopped for good (why): list again.
    std::function<void(const Status& why)> lost;
  };
  // Following stops when the returned object is destroyed.
  class Following {
   public:
    virtual ~Following() = default;
  };
  // Hands every commit after `revision` to `sink`, from now on.
  virtual std::unique_ptr<Following> Follow(int64_t revision, Sink sink) = 0;
};

}  // namespace berth::store
