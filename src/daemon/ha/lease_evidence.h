// LeaseEvidence: what etcd's members, looked at while a berthd leader's
// keepalives fail, prove about how long its lease lasts (docs/ha.md,
// "Leader election").
//
// A look is each member's Maintenance.Status: the leader it knows (0:
// none) and the raft term of the last entry it applied (not the term it
// votes at). etcd's leader renews every lease to its full ttl, plus an
// election timeout, when it applies the first entry of its own term (its
// lessor's Promote). So when a member that has applied an entry of a term
// later than the last confirmed keepalive's names a leader, that leader
// leads at such a term; if an earlier look (or the same one) found the
// leader itself still at the keepalive's term or an earlier one, it had
// not applied the first entry of its own term then, and renewed every
// lease after that look.
// The lease lasts a ttl from the look, provided no earlier etcd leader
// revoked it meanwhile: the caller checks that it is still within its own
// deadline, before which no leader that renewed the lease after the
// keepalive can have expired it, and none before the new one was elected
// can commit anything since.
// This is the common case of an etcd election: its leader dies, and the
// others, still at its term, elect one of them. It assumes the leader
// named is etcd's latest: a member cut off with a deposed leader names it
// still, and a later leader elected out of sight may have renewed every
// lease before the look (docs/ha.md, "Leader election", says when).
// It counts once per confirmed keepalive: a second election behind the
// first, with the lease never renewed in between, deposes the leader
// rather than be reasoned about.
// Once a member ahead names a leader never seen behind, nothing more is
// proved until the next confirmed keepalive: that leader may be the later
// one and have renewed every lease before any look. (etcd 3.4 renews
// while applying the first entry and records its term just after, so a
// leader may answer "behind" just after it renewed: the election timeout
// the renewal adds covers that.)
// Not thread-safe: Leadership's threads use it under its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/time.h"
#include "store/etcd_client.h"

namespace berth::daemon {

class LeaseEvidence {
 public:
  // A keepalive was confirmed; its answer was at applied raft term `term`.
  // Forgets every earlier look. The term never goes down: a lagging
  // member may answer at an earlier one.
  void Confirmed(uint64_t term);
  // One look at the members, begun at `at`: the time from which the looks
  // so far prove the lease lasts a whole ttl (the class comment), or
  // nullopt when they prove nothing (or proved it once already, or a
  // leader never seen behind was named).
  std::optional<Timestamp> Look(const std::vector<store::EtcdClient::RaftView>& views,
                                Timestamp at);

 private:
  uint64_t term_ = 0;
  std::map<uint64_t, Timestamp> behind_;  // member id -> the last look it was at <= term_
  bool spent_ = false;  // since Confirmed, a look proved something or named an unseen leader
};

}  // namespace berth::daemon
