#include "daemon/ha/lease_evidence.h"

#include <algorithm>

namespace berth::daemon {

void LeaseEvidence::Confirmed(uint64_t term) {
  term_ = std::max(term_, term);
  behind_.clear();
  spent_ = false;
}

std::optional<Timestamp> LeaseEvidence::Look(const std::vector<store::EtcdClient::RaftView>& views,
                                             Timestamp at) {
  std::optional<Timestamp> lasts;
  for (const store::EtcdClient::RaftView& v : views) {
    if (v.raft_term <= term_) {
      behind_[v.member_id] = at;
    } else if (v.leader != 0) {
      if (const auto seen = behind_.find(v.leader); seen != behind_.end()) lasts = seen->second;
    }
  }
  if (spent_ || !lasts) return std::nullopt;
  spent_ = true;
  return lasts;
}

}  // namespace berth::daemon
