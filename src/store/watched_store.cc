#include "store/watched_store.h"

namespace berth::store {

Result<int64_t> WatchedStore::Commit(const std::vector<Write>& writes) {
  return CommitRecording(writes, true);
}

Result<int64_t> WatchedStore::CommitOwn(const std::vector<Write>& writes) {
  return CommitRecording(writes, false);
}

Result<int64_t> WatchedStore::CommitRecording(const std::vector<Write>& writes, bool record) {
  std::shared_lock commit(commit_mu_);
  Result<int64_t> revision = inner_->Commit(writes);
  if (!revision.ok() || writes.empty()) return revision;
  std::lock_guard lock(changes_mu_);
  if (!watching_) return revision;
  std::vector<Change>& changes = changes_[*revision];  // recorded even when empty
  if (!record) return revision;
  for (const Write& w : writes)
    if (watched_.contains(w.kind)) changes.push_back({w.op, w.kind, w.id, w.body, *revision});
  return revision;
}

Result<std::vector<std::vector<StoredObject>>> WatchedStore::Watch(std::vector<std::string> kinds) {
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

std::vector<Change> WatchedStore::TakeChanges() {
  std::lock_guard lock(changes_mu_);
  std::vector<Change> out;
  for (auto it = changes_.begin(); it != changes_.end() && it->first == next_revision_;
       it = changes_.erase(it), ++next_revision_)
    for (Change& change : it->second) out.push_back(std::move(change));
  return out;
}

}  // namespace berth::store
