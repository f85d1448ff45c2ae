// MemoryStore: a Store kept in memory, for tests and dry runs. Nothing
// survives the process; everything else follows the Store contract.
#pragma once

#include <map>
#include <mutex>

#include "store/store.h"

namespace berth::store {

class MemoryStore final : public Store {
 public:
  MemoryStore() = default;
  // Takes at most `limits` in one Commit, refusing a larger batch whole as
  // etcd does: for tests of callers that split their writes.
  explicit MemoryStore(BatchLimits limits) : limits_(limits) {}

  Result<int64_t> Commit(const std::vector<Write>& writes) override;
  Result<std::optional<StoredObject>> Get(std::string_view kind,
                                          std::string_view id) const override;
  Result<std::vector<StoredObject>> List(std::string_view kind) const override;
  Result<std::vector<StoredObject>> ListPrefix(std::string_view kind,
                                               std::string_view prefix) const override;
  int64_t revision() const override;
  BatchLimits batch_limits() const override { return limits_; }

 private:
  BatchLimits limits_;
  using Key = std::pair<std::string, std::string>;  // (kind, id), ordered for List
  mutable std::mutex mu_;
  std::map<Key, StoredObject, std::less<>> objects_;
  int64_t revision_ = 0;
};

}  // namespace berth::store
