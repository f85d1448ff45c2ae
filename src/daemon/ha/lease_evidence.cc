#include "daemon/ha/lease_evidence.h"

#include <algorithm>

namespace berth::daemon {

void LeaseEvidence::Confirmed(uint64_t term) {
  term_ = std::max(term_, term);
  behind_.clear();
  spent_ = false;
}

// Two passes: the views of one look come in the order the members
// answered, and a leader seen behind in the same look proves the lease
// from the look's start whichever answered first (it applies the first
// entry of its term, and renews, after its own answer).
std::optional<Timestamp> LeaseEvidence::Look(const std::vector<store::EtcdClient::RaftView>& views,
                                             Timestamp at) {
  for (const store::EtcdClient::RaftView& v : views)
    if (v.raft_term <= term_) behind_[v.member_id] = at;
  std::optional<Timestamp> lasts;
  for (const store::EtcdClient::RaftView& v : views) {
    if (v.raft_term <= term_ || v.leader == 0) continue;
    const auto seen = behind_.find(v.leader);
    if (seen == behind_.end()) {  // a leader never seen behind: nothing is proved any more
      spent_ = true;
      return std::nullopt;
    }
    lasts = std::min(lasts.value_or(seen->second), seen->second);  // two named: the earlier
  }
  if (spent_ || !lasts) return std::nullopt;
  spent_ = true;
  return lasts;
}

}  // namespace berth::daemon
