#include "store/memory_store.h"

namespace berth::store {

Result<int64_t> MemoryStore::Commit(const std::vector<Write>& writes) {
  BERTH_RETURN_IF_ERROR(ValidateWrites(writes));
  size_t bytes = 0;
  for (const Write& w : writes) bytes += w.kind.size() + w.id.size() + w.body.size();
  if ((limits_.writes != 0 && writes.size() > limits_.writes) ||
      (limits_.bytes != 0 && bytes > limits_.bytes))
    return Status::InvalidArgument("a batch of " + std::to_string(writes.size()) +
                                   " writes is more than one commit takes");
  std::lock_guard lock(mu_);
  if (writes.empty()) return revision_;
  const int64_t next = revision_ + 1;
  // The batch's effect, checked write by write against what earlier writes
  // of the same batch did, and applied only if every precondition holds.
  std::map<Key, std::optional<StoredObject>> staged;
  for (const Write& w : writes) {
    Key key{w.kind, w.id};
    auto in_batch = staged.find(key);
    int64_t current = 0;
    if (in_batch != staged.end()) {
      current = in_batch->second ? in_batch->second->revision : 0;
    } else if (auto it = objects_.find(key); it != objects_.end()) {
      current = it->second.revision;
    }
    if (!PreconditionHolds(w, current)) return PreconditionFailed(w, current);
    if (w.op == Write::Op::kCheck) continue;
    if (w.op == Write::Op::kPut)
      staged[key] = StoredObject{w.kind, w.id, w.body, next};
    else
      staged[key] = std::nullopt;
  }
  for (auto& [key, object] : staged) {
    if (object)
      objects_[key] = std::move(*object);
    else
      objects_.erase(key);
  }
  return revision_ = next;
}

Result<std::optional<StoredObject>> MemoryStore::Get(std::string_view kind,
                                                     std::string_view id) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(Key{kind, id});
  if (it == objects_.end()) return std::optional<StoredObject>();
  return std::optional<StoredObject>(it->second);
}

Result<std::vector<StoredObject>> MemoryStore::List(std::string_view kind) const {
  std::lock_guard lock(mu_);
  std::vector<StoredObject> out;
  for (auto it = objects_.lower_bound(Key{kind, ""});
       it != objects_.end() && it->first.first == kind; ++it)
    out.push_back(it->second);
  return out;
}

Result<std::vector<StoredObject>> MemoryStore::ListPrefix(std::string_view kind,
                                                          std::string_view prefix) const {
  std::lock_guard lock(mu_);
  std::vector<StoredObject> out;
  for (auto it = objects_.lower_bound(Key{kind, prefix});
       it != objects_.end() && it->first.first == kind && it->first.second.starts_with(prefix);
       ++it)
    out.push_back(it->second);
  return out;
}

int64_t MemoryStore::revision() const {
  std::lock_guard lock(mu_);
  return revision_;
}

}  // namespace berth::store
