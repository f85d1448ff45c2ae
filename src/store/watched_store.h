// WatchedStore: a Store that also tells one reader what changed. It wraps
// another Store and, once Watch was called, records every
// successful Commit's writes in order, until the reader takes them with
// TakeChanges. berthd's control loop reads the whole state once (Watch) and
// afterwards only what changed, so a pass costs what changed, not the size
// of the cluster.
//
// Only commits through this object are seen: the wrapped store must have no
// other writer (berthd holds its data directory's lock). Changes to kinds
// the reader did not ask for are not kept.
//
// Thread-safe: every method may be called from any thread. Commits run
// concurrently (the wrapped store may group them) but not during Watch, so a
// Watch snapshot and the changes after it neither overlap nor leave a gap;
// TakeChanges hands out changes in revision order, holding back those that
// follow a commit not yet recorded.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "store/store.h"

namespace berth::store {

struct Change {
  Write::Op op = Write::Op::kPut;
  std::string kind, id, body;  // body: kPut only
  int64_t revision = 0;        // of the commit that made it
};

class WatchedStore final : public Store {
 public:
  // Shares ownership of `inner`: berthd's tests may keep a handle on it.
  explicit WatchedStore(std::shared_ptr<Store> inner) : inner_(std::move(inner)) {}

  Result<int64_t> Commit(const std::vector<Write>& writes) override;
  Result<std::optional<StoredObject>> Get(std::string_view kind,
                                          std::string_view id) const override {
    return inner_->Get(kind, id);
  }
  Result<std::vector<StoredObject>> List(std::string_view kind) const override {
    return inner_->List(kind);
  }
  Result<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                               std::string_view prefix) const override {
    return inner_->ListPrefix(kind, prefix);
  }
  int64_t revision() const override { return inner_->revision(); }

  // Every object of `kinds` (one List per kind, in the order given), and
  // from now on the changes to those kinds; forgets changes not yet taken.
  Result<std::vector<std::vector<StoredObject>>> Watch(std::vector<std::string> kinds);
  // The changes since Watch or the last call, in commit order.
  std::vector<Change> TakeChanges();
  // Commits as Commit does, but TakeChanges will not hand these writes out:
  // for the reader's own writes, which it holds already (berthd's control
  // loop writes a pass's tasks this way, so a pass of 100,000 tasks does
  // not copy them into the change log).
  Result<int64_t> CommitOwn(const std::vector<Write>& writes);

 private:
  Result<int64_t> CommitRecording(const std::vector<Write>& writes, bool record);

  std::shared_ptr<Store> inner_;
  std::shared_mutex commit_mu_;  // commits share it; Watch takes it alone
  std::mutex changes_mu_;
  std::set<std::string, std::less<>> watched_;
  bool watching_ = false;
  int64_t next_revision_ = 0;                       // the next one TakeChanges hands out
  std::map<int64_t, std::vector<Change>> changes_;  // by revision (empty: nothing watched)
};

}  // namespace berth::store
