// Leadership: which berthd replica on a shared etcd store runs the control
// loop (docs/ha.md), and the leader's fence.
//
// Election is a lease-guarded key, as etcd's own election recipe builds it,
// without its blocking Campaign call:
//  1. grant a lease of `ttl`;
//  2. txn: if the key `<prefix>leader/berthd` does not exist (CREATE == 0),
//     put {id, address} with the lease; else read it (who leads);
//  3. the key's create revision is the leader's epoch.
// The leader keeps its lease alive every ttl/3 (one request each). It has
// lost when etcd says the lease is gone, or when no keepalive succeeded for
// 2/3 of the ttl, whichever comes first (a leader paused past its lease, or
// cut off from etcd, then stops before etcd can have let another in); lost
// leadership is final for this Leadership (berthd exits, as kube-scheduler
// does, and its supervisor starts it again with a clean state). Followers try
// step 2 every ttl/3, so a new leader follows an old one's lease expiry by at
// most ttl/3.
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
// Thread-safe. Start and Stop from the owner; the callbacks run on the
// leadership thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/time.h"
#include "store/etcd_store.h"

namespace berth::daemon {

struct LeadershipOptions {
  std::string id;       // this replica's name (berthd: hostname:port)
  std::string address;  // where clients reach its API ("http://host:port")
  // The lease's time to live (default 10 s; etcd's minimum is about 2 s).
  Duration ttl = std::chrono::seconds(10);
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
  // Ends the thread; a leader revokes its lease, so that another replica
  // takes over at once instead of after the ttl.
  void Stop();

  struct View {
    bool leading = false;
    int64_t epoch = 0;      // the leader's (0: none known)
    std::string leader_id;  // "" when none is known
    std::string leader_address;
  };
  View view() const;
  // {Check(leader key, epoch)} once this replica has led, for ever after:
  // having lost, its writes fail rather than commit unfenced. Empty before.
  std::vector<store::Write> Fence() const;

 private:
  void Run();
  // One round as a follower: campaign once, or learn who leads.
  void Campaign();
  // One round as the leader: keep the lease alive; false when it is lost.
  bool Renew();
  bool HoldsKey(std::string* why);
  using Kvs = std::vector<mvccpb::KeyValue>;
  Result<Kvs> ReadKey();
  void Compact();
  // Waits until `until` or Stop; false on Stop.
  bool Sleep(Timestamp until);

  store::EtcdStore& store_;
  std::unique_ptr<store::EtcdClient> client_;
  const Clock& clock_;
  LeadershipOptions options_;
  std::function<void(int64_t)> elected_;
  std::function<void(std::string)> lost_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  View view_;
  int64_t fence_epoch_ = 0;  // the epoch this replica led at (0: never)
  int64_t lease_ = 0;
  Timestamp renewed_{};  // the last keepalive etcd confirmed
  Timestamp next_compaction_{};
  int64_t compact_to_ = 0;  // the revision seen one interval ago
  std::thread thread_;
};

}  // namespace berth::daemon
