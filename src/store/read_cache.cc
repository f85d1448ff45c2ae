#include "store/read_cache.h"

#include <algorithm>

namespace berth::store {

ReadCache::ReadCache(ChangeFeed& feed, std::vector<std::string> kinds)
    : feed_(feed), kinds_(kinds.begin(), kinds.end()) {}

ReadCache::~ReadCache() {
  std::lock_guard start(start_mu_);
  following_.reset();
}

int64_t ReadCache::revision() const {
  std::shared_lock lock(mu_);
  return revision_;
}

std::optional<std::vector<StoredObject>> ReadCache::ListPrefix(std::string_view kind,
                                                               std::string_view prefix,
                                                               int64_t at_least, Duration wait) {
  if (!Holds(kind) || !EnsureFollowing()) return std::nullopt;
  std::shared_lock lock(mu_);
  const Duration patience = revision_ < waited_for_ ? Duration{0} : wait;
  if (!applied_cv_.wait_for(lock, patience,
                            [&] { return !following_ok_ || revision_ >= at_least; })) {
    waited_for_ = std::max(waited_for_.load(), at_least);
    return std::nullopt;
  }
  if (!following_ok_) return std::nullopt;
  const Objects& of_kind = objects_.find(kind)->second;
  std::vector<StoredObject> out;
  for (auto it = of_kind.lower_bound(prefix); it != of_kind.end() && it->first.starts_with(prefix);
       ++it)
    out.push_back(it->second);
  ++served_;
  return out;
}

// A reader that finds another listing does not wait for it: it reads the
// store, as it would without a cache.
bool ReadCache::EnsureFollowing() {
  {
    std::shared_lock lock(mu_);
    if (following_ok_) return true;
  }
  std::unique_lock start(start_mu_, std::try_to_lock);
  if (!start.owns_lock()) return false;
  {
    std::shared_lock lock(mu_);
    if (following_ok_) return true;  // listed while we waited for start_mu_
  }
  following_.reset();  // a lost feed's thread ends before the list
  const std::vector<std::string> kinds(kinds_.begin(), kinds_.end());
  Result<Snapshot> snapshot = feed_.ListAtOneRevision(kinds);
  if (!snapshot.ok()) return false;
  {
    std::unique_lock lock(mu_);
    objects_.clear();
    for (size_t i = 0; i < kinds.size(); ++i) {
      Objects& of_kind = objects_[kinds[i]];
      for (StoredObject& o : snapshot->kinds[i]) {
        std::string id = o.id;
        of_kind.emplace(std::move(id), std::move(o));
      }
    }
    revision_ = snapshot->revision;
    following_ok_ = true;
  }
  ++lists_;
  following_ =
      feed_.Follow(snapshot->revision, {[this](int64_t revision, std::vector<Change> changes) {
                                          Apply(revision, std::move(changes));
                                        },
                                        [this](const Status&) { Lost(); }});
  applied_cv_.notify_all();
  return true;
}

void ReadCache::Apply(int64_t revision, std::vector<Change> changes) {
  {
    std::unique_lock lock(mu_);
    for (Change& c : changes) {
      auto of_kind = objects_.find(c.kind);
      if (of_kind == objects_.end()) continue;  // a kind not held
      if (c.op == Write::Op::kDelete) {
        of_kind->second.erase(c.id);
      } else {
        std::string id = c.id;
        of_kind->second.insert_or_assign(
            std::move(id),
            StoredObject{std::move(c.kind), std::move(c.id), std::move(c.body), c.revision});
      }
    }
    revision_ = std::max(revision_, revision);
  }
  applied_cv_.notify_all();
}

void ReadCache::Lost() {
  {
    std::unique_lock lock(mu_);
    following_ok_ = false;
  }
  applied_cv_.notify_all();
}

}  // namespace berth::store
