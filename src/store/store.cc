#include "store/store.h"

namespace berth::store {

Result<std::vector<StoredObject>> Store::ListPrefix(std::string_view kind,
                                                    std::string_view prefix) const {
  Result<std::vector<StoredObject>> all = List(kind);
  if (all.ok())
    std::erase_if(*all, [&](const StoredObject& o) { return !o.id.starts_with(prefix); });
  return all;
}

std::vector<std::vector<size_t>> Store::PartsForCommit(const std::vector<Write>& writes,
                                                       const std::vector<Write>& prefix) const {
  return SplitIndices(writes, batch_limits(), prefix);
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

std::vector<std::vector<size_t>> SplitIndices(const std::vector<Write>& writes,
                                              const Store::BatchLimits& limits,
                                              const std::vector<Write>& prefix) {
  size_t prefix_bytes = 0;
  for (const Write& w : prefix) prefix_bytes += WriteBytes(w);
  std::vector<std::vector<size_t>> parts;
  size_t bytes = 0;
  for (size_t i = 0; i < writes.size(); ++i) {
    const size_t size = WriteBytes(writes[i]);
    const bool full =
        !parts.empty() &&
        ((limits.writes != 0 && parts.back().size() + prefix.size() >= limits.writes) ||
         (limits.bytes != 0 && bytes + size > limits.bytes));
    if (parts.empty() || full) {
      parts.emplace_back();
      bytes = prefix_bytes;
    }
    parts.back().push_back(i);
    bytes += size;
  }
  return parts;
}

std::vector<Write> Gather(const std::vector<Write>& writes, const std::vector<size_t>& indices,
                          const std::vector<Write>& prefix) {
  std::vector<Write> batch = prefix;
  batch.reserve(prefix.size() + indices.size());
  for (size_t i : indices) batch.push_back(writes[i]);
  return batch;
}

std::vector<std::vector<Write>> SplitBatch(const std::vector<Write>& writes,
                                           const Store::BatchLimits& limits,
                                           const std::vector<Write>& prefix) {
  std::vector<std::vector<Write>> batches;
  for (const std::vector<size_t>& indices : SplitIndices(writes, limits, prefix))
    batches.push_back(Gather(writes, indices, prefix));
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
