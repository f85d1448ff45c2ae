// Leadership: which berthd replica on a shared etcd store runs the control
// loop (docs/ha.md), and the leader's fence.
//
// Election is a lease-guarded key, as etcd's own election recipe builds it,
// without its blocking Campaign call:
//  1. grant a lease of `ttl`;
//  2. txn: if the key `<prefix>leader/berthd` does not exist (CREATE == 0),
//     put {id, address} with the lease; else read it (who leads);
//  3. the key's create revision is the leader's epoch.
// The leader keeps its lease alive every ttl/24 (one keepalive and one read
// of the key each). It has lost when etcd says the lease is gone, when the
// key is no longer its own, or when no keepalive succeeded for 23/24 of the
// ttl, whichever comes first. etcd starts a lease's ttl again when it
// receives a keepalive, which is after the leader asked, and deletes
// expired keys only every 500 ms, so a leader paused past its lease, or cut
// off from etcd, stops at least ttl/24 before etcd can have let another in;
// the fence stops whatever it still writes. Renewing that often, with the
// deadline that late, lets a leader on the default 3 s lease ride out an
// etcd election (etcd's members hold or refuse requests for one to two
// election timeouts, 1 s by default, and the new etcd leader renews every
// lease) without being deposed. While its keepalives fail, the leader also
// looks at etcd's raft every 100 ms (LeaseEvidence): a new etcd leader
// elected before the deadline moves it on, even when the keepalives are
// still waiting on members that lost the old one.
// Lost leadership is final for this Leadership (berthd exits, as
// kube-scheduler does, and its supervisor starts it again with a clean
// state).
//
// Followers try step 2 every ttl/3, and at once when their watch on the
// key sees it deleted (its lease expired or was revoked), so a new leader
// follows an old one's lease expiry by a few round trips to etcd.
//
// The fence: every write of the leader carries Write::Check(leader key,
// epoch). etcd applies it only while that key, created at that epoch,
// exists, so a leader that lost its lease cannot commit anything, however
// late it wakes up. The leader also checks at every renewal that the key
// is still its own.
//
// While leading, the leader also compacts etcd's history every
// `compact_interval`, up to the revision it saw one interval earlier (as the
// Kubernetes API server does every 5 minutes): a watcher more than one
// interval behind lists again.
//
// Thread-safe. Start and Stop from the owner; `elected` runs on a thread
// of its own (renewals go on meanwhile), `lost` on the leadership thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/time.h"
#include "daemon/ha/lease_evidence.h"
#include "store/etcd_store.h"

namespace berth::daemon {

struct LeadershipOptions {
  std::string id;       // this replica's name (berthd: hostname:port)
  std::string address;  // where clients reach its API ("http://host:port")
  // The lease's time to live (default 3 s; etcd's minimum is about 2 s). A
  // dead leader is replaced within about ttl + 0.5 s (etcd looks for
  // expired leases every 500 ms).
  Duration ttl = std::chrono::seconds(3);
  // How often the leader compacts etcd's history (default 5 min; 0: never).
  Duration compact_interval = std::chrono::minutes(5);
};

class Leadership {
 public:
  static constexpr const char* kKind = "leader";
  static constexpr const char* kId = "berthd";

  // `elected(epoch)` once this replica leads; `lost(why)` once it no
  // longer does (it never leads again).
  Leadership(store::EtcdStore& store, const Clock& clock, LeadershipOptions options,
             std::function<void(int64_t epoch)> elected, std::function<void(std::string)> lost);
  ~Leadership();

  // Starts campaigning as `id`, reachable at `address` (set here, not in
  // the options, when they are known only once the API server listens).
  void Start(std::string id, std::string address);
  // Ends the threads; a leader revokes its lease, so that another replica
  // takes over at once instead of after the ttl.
  void Stop();

  struct View {
    bool leading = false;
    int64_t epoch = 0;      // the leader's (0: none known)
    std::string leader_id;  // "" when none is known
    std::string leader_address;
  };
  View view() const;
  // The longest this replica, leading, went without a keepalive etcd
  // confirmed (it steps down past 23/24 of the ttl): how close an etcd
  // election or a slow etcd came to deposing it.
  Duration longest_unconfirmed() const;
  // How many times etcd's raft state proved this replica's lease lasts
  // beyond its last confirmed keepalive (LeaseEvidence: a new etcd leader
  // seen while its keepalives failed), moving its deadline on.
  uint64_t lease_proofs() const;
  // {Check(leader key, epoch)} once this replica has led, for ever after:
  // having lost, its writes fail rather than commit unfenced. Empty before.
  std::vector<store::Write> Fence() const;

 private:
  void Run();
  // One round as a follower: campaign once, or learn who leads.
  void Campaign();
  // One round as the leader: keep the lease alive.
  enum class Renewal { kRenewed, kRetry, kLost };
  Renewal Renew();
  // How long after renewed_ (its last confirmed keepalive, or a later time
  // a look proved) a leader still leads.
  Duration RenewDeadline() const { return options_.ttl * 23 / 24; }
  // Whether RenewDeadline has passed since renewed_.
  bool Overdue() const;
  // How long one request of a renewal may take before the next member, or
  // the next round, is asked: a member that has just lost its etcd leader
  // holds a keepalive for a whole election timeout (1 s by default) before
  // it looks for the new one, while a keepalive asked anew once it has one
  // is answered at once.
  Duration RenewalTimeout() const { return options_.ttl / 12; }
  // Runs on watcher_: wakes Run as soon as the key is deleted.
  void WatchKey();
  // Runs on looker_: looks at etcd's raft while the keepalives fail.
  void LookAtRaft();
  static constexpr Duration kLookEvery{100};  // how often a look begins while keepalives fail
  bool HoldsKey(std::string* why);
  using Kvs = std::vector<mvccpb::KeyValue>;
  // Each request within `timeout` (zero: the leadership client's ttl/3).
  Result<Kvs> ReadKey(Duration timeout = {});
  void Compact();
  // Waits until `until`, Stop or (with `or_key_deleted`) the key's
  // deletion; false on Stop.
  bool Sleep(Timestamp until, bool or_key_deleted);

  store::EtcdStore& store_;
  // client_ for the campaign, the key and the watch; renewer_, whose calls
  // try each member once, for the keepalive and the looks at etcd's raft.
  std::unique_ptr<store::EtcdClient> client_, renewer_;
  const Clock& clock_;
  LeadershipOptions options_;
  std::function<void(int64_t)> elected_;
  std::function<void(std::string)> lost_;
  mutable std::mutex mu_;  // guards every field below it but the threads and watch_
  std::condition_variable wake_;
  bool stopping_ = false;
  bool key_deleted_ = false;  // seen by the watch, not yet acted on
  View view_;
  int64_t fence_epoch_ = 0;  // the epoch this replica led at (0: never)
  int64_t lease_ = 0;
  // The last keepalive etcd confirmed, when it was asked; renewed_ is that
  // or a later time from which etcd's raft state proves the lease lasts.
  Timestamp renewed_{}, confirmed_{};
  LeaseEvidence evidence_;      // what the looks since confirmed_ prove
  uint64_t confirmations_ = 0;  // keepalives confirmed: a look begun before one is dropped
  Duration longest_unconfirmed_{0};
  uint64_t lease_proofs_ = 0;
  Timestamp next_compaction_{};
  int64_t compact_to_ = 0;  // the revision seen one interval ago
  std::thread thread_;
  std::thread starting_;  // runs `elected`, so that renewals go on meanwhile
  store::EtcdClient::StreamHandle watch_;
  std::thread watcher_;
  std::thread looker_;
};

}  // namespace berth::daemon
