#include "store/store.h"

namespace berth::store {

Result<std::vector<StoredObject>> Store::ListPrefix(std::string_view kind,
                                                    std::string_view prefix) const {
  Result<std::vector<StoredObject>> all = List(kind);
  if (all.ok())
    std::erase_if(*all, [&](const StoredObject& o) { return !o.id.starts_with(prefix); });
  return all;
}

Status ValidateWrites(const std::vector<Write>& writes) {
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].kind.empty() || writes[i].id.empty())
      return Status::InvalidArgument("write " + std::to_string(i) +
                                     ": kind and id must not be empty");
    if (writes[i].expect == Write::Expect::kRevision && writes[i].expected_revision <= 0)
      return Status::InvalidArgument("write " + std::to_string(i) +
                                     ": an expected revision must be positive");
  }
  return Status::Ok();
}

std::vector<std::vector<Write>> SplitBatch(const std::vector<Write>& writes,
                                           const Store::BatchLimits& limits,
                                           const std::vector<Write>& prefix) {
  size_t prefix_bytes = 0;
  for (const Write& w : prefix) prefix_bytes += WriteBytes(w);
  std::vector<std::vector<Write>> batches;
  size_t bytes = 0;
  for (const Write& w : writes) {
    const bool full =
        !batches.empty() && ((limits.writes != 0 && batches.back().size() >= limits.writes) ||
                             (limits.bytes != 0 && bytes + WriteBytes(w) > limits.bytes));
    if (batches.empty() || full) {
      batches.push_back(prefix);
      bytes = prefix_bytes;
    }
    batches.back().push_back(w);
    bytes += WriteBytes(w);
  }
  return batches;
}

bool PreconditionHolds(const Write& write, int64_t actual_revision) {
  switch (write.expect) {
    case Write::Expect::kAbsent:
      return actual_revision == 0;
    case Write::Expect::kRevision:
      return actual_revision == write.expected_revision;
    case Write::Expect::kAnything:
      return true;
  }
  return true;
}

Status PreconditionFailed(const Write& write, int64_t actual_revision) {
  const std::string name = write.kind + " '" + write.id + "'";
  if (write.expect == Write::Expect::kAbsent) return Status::Conflict(name + " already exists");
  if (actual_revision == 0) return Status::Conflict(name + " does not exist");
  return Status::Conflict(name + " changed: expected revision " +
                          std::to_string(write.expected_revision) + ", found " +
                          std::to_string(actual_revision));
}

}  // namespace berth::store
