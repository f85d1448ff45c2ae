#include "daemon/ha/leadership.h"

namespace berth::daemon {

using store::EtcdInt;
using store::EtcdJson;
namespace pb = etcdserverpb;

namespace {

// etcd grants leases in whole seconds, at least 2: the deadlines count
// from the ttl it grants.
Duration WholeSeconds(Duration ttl) {
  return std::max<Duration>(std::chrono::seconds(2),
                            std::chrono::duration_cast<std::chrono::seconds>(ttl));
}

// The leadership's own connections: a request gives up after a third of
// the ttl, and a call goes on to the other members while `retry_for` has
// not passed since it began.
std::unique_ptr<store::EtcdClient> ClientFor(store::EtcdStore& store, Duration ttl,
                                             Duration retry_for) {
  store::EtcdClientOptions options = store.client().options();  // endpoints and TLS
  options.request_timeout = ttl / 3;
  options.retry_for = retry_for;
  return std::make_unique<store::EtcdClient>(options);
}

}  // namespace

Leadership::Leadership(store::EtcdStore& store, const Clock& clock, LeadershipOptions options,
                       std::function<void(int64_t)> elected, std::function<void(std::string)> lost)
    : store_(store),
      client_(ClientFor(store, WholeSeconds(options.ttl), WholeSeconds(options.ttl) / 3)),
      renewer_(ClientFor(store, WholeSeconds(options.ttl), Duration(0))),
      clock_(clock),
      options_(std::move(options)),
      elected_(std::move(elected)),
      lost_(std::move(lost)) {
  options_.ttl = WholeSeconds(options_.ttl);
}

Leadership::~Leadership() { Stop(); }

void Leadership::Start(std::string id, std::string address) {
  options_.id = std::move(id);
  options_.address = std::move(address);
  thread_ = std::thread([this] { Run(); });
  watcher_ = std::thread([this] { WatchKey(); });
  looker_ = std::thread([this] { LookAtRaft(); });
}

void Leadership::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  watch_.Cancel();
  if (thread_.joinable()) thread_.join();
  if (watcher_.joinable()) watcher_.join();
  if (looker_.joinable()) looker_.join();
  if (starting_.joinable()) starting_.join();
  int64_t lease = 0;
  {
    std::lock_guard lock(mu_);
    if (view_.leading) std::swap(lease, lease_);
  }
  if (lease != 0) (void)client_->Call("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
}

// A leader past its renewal deadline no longer says it leads, even before
// its thread has noticed (it may be inside a keepalive call).
Leadership::View Leadership::view() const {
  std::lock_guard lock(mu_);
  View view = view_;
  if (view.leading && clock_.Now() - renewed_ > RenewDeadline()) view.leading = false;
  return view;
}

Duration Leadership::longest_unconfirmed() const {
  std::lock_guard lock(mu_);
  return longest_unconfirmed_;
}

uint64_t Leadership::lease_proofs() const {
  std::lock_guard lock(mu_);
  return lease_proofs_;
}

std::vector<store::Write> Leadership::Fence() const {
  std::lock_guard lock(mu_);
  if (fence_epoch_ == 0) return {};
  return {store::Write::Check(kKind, kId, fence_epoch_)};
}

bool Leadership::Sleep(Timestamp until, bool or_key_deleted) {
  std::unique_lock lock(mu_);
  clock_.WaitUntil(lock, wake_, until,
                   [&] { return stopping_ || (or_key_deleted && key_deleted_); });
  if (or_key_deleted) key_deleted_ = false;
  return !stopping_;
}

void Leadership::Run() {
  while (true) {
    bool leading = false;
    {
      std::lock_guard lock(mu_);
      leading = view_.leading;  // not view(): an overdue leader must still find out
    }
    Duration wait = options_.ttl / 3;
    if (!leading) {
      Campaign();
      std::lock_guard lock(mu_);
      if (view_.leading) wait = options_.ttl / 24;  // won: the first renewal comes soon
    } else {
      const Renewal renewal = Renew();
      if (renewal == Renewal::kLost) return;
      // A failed keepalive has tried every member once; the pause only
      // keeps a refusal that comes at once from spinning.
      wait = renewal == Renewal::kRetry ? Duration(100) : options_.ttl / 24;
      if (renewal == Renewal::kRenewed && options_.compact_interval.count() > 0 &&
          clock_.Now() >= next_compaction_)
        Compact();
    }
    if (!Sleep(clock_.Now() + wait, true)) return;
  }
}

// The watch starts at etcd's current revision; a deletion while it was
// down is caught by the check each (re)start asks for, or the next round.
void Leadership::WatchKey() {
  pb::WatchRequest request;
  pb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(store_.Key(kKind, kId));
  create->add_filters(pb::WatchCreateRequest::NOPUT);
  auto wake = [this] {
    {
      std::lock_guard lock(mu_);
      key_deleted_ = true;
    }
    wake_.notify_all();
  };
  do {
    (void)client_->Watch(request, watch_, [&](const pb::WatchResponse& answer) {
      if (answer.created() || answer.events_size() > 0) wake();
      return !answer.canceled();  // etcd ended it: watch again
    });
  } while (Sleep(clock_.Now() + options_.ttl / 3, false));
}

// While the keepalives fail, whatever they are waiting on, a look begins
// every kLookEvery (or as soon as the last is answered, when a member
// hangs): a new etcd leader is seen within about that of its election, in
// time to count when an election (a split vote) ends just before the
// deadline.
void Leadership::LookAtRaft() {
  for (Timestamp at = clock_.Now(); Sleep(at + kLookEvery, false);) {
    at = clock_.Now();
    uint64_t confirmations = 0;
    {
      std::lock_guard lock(mu_);
      if (!view_.leading || at - confirmed_ <= RenewalTimeout()) continue;
      confirmations = confirmations_;
    }
    const std::vector<store::EtcdClient::RaftView> views = renewer_->RaftViews(RenewalTimeout());
    std::lock_guard lock(mu_);
    if (confirmations != confirmations_ || !view_.leading) continue;  // a keepalive went through
    const std::optional<Timestamp> lasts = evidence_.Look(views, at);
    // Counts only if the lease was still sure when the answers came. A
    // proof refused here is spent all the same (rare: it costs only this
    // keepalive's one proof).
    if (!lasts || clock_.Now() - renewed_ > RenewDeadline() || *lasts <= renewed_) continue;
    renewed_ = *lasts;
    ++lease_proofs_;
  }
}

void Leadership::Campaign() {
  const std::string key = store_.Key(kKind, kId);
  Result<Kvs> current = ReadKey();
  if (!current.ok()) return;  // etcd unreachable: try again next round
  Kvs kvs = std::move(*current);
  if (kvs.empty()) {
    const int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.ttl).count();
    const Timestamp asked = clock_.Now();  // the lease runs from its grant, at the latest
    Result<EtcdJson> grant = client_->Call("/v3/lease/grant", {{"TTL", seconds}});
    if (!grant.ok() || EtcdInt(*grant, "ID") == 0) return;
    const int64_t lease = EtcdInt(*grant, "ID");
    const std::string value = EtcdJson{{"id", options_.id}, {"address", options_.address}}.dump();
    pb::TxnRequest txn;
    *txn.add_compare() = store::EtcdCompare(key, store::Write::Create(kKind, kId, value));
    pb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    put->set_lease(lease);
    txn.add_failure()->mutable_request_range()->set_key(key);
    Result<pb::TxnResponse> won = client_->Txn(txn);
    if (won.ok() && won->succeeded()) {
      const int64_t epoch = won->header().revision();
      {
        std::lock_guard lock(mu_);
        view_ = {true, epoch, options_.id, options_.address};
        fence_epoch_ = epoch;
        lease_ = lease;
        renewed_ = confirmed_ = asked;
        evidence_.Confirmed(won->header().raft_term());
        ++confirmations_;
        next_compaction_ = clock_.Now() + options_.compact_interval;
        compact_to_ = store_.revision();
      }
      // Off this thread: a new leader's start (reading every node) may take
      // longer than its lease has to be renewed in.
      starting_ = std::thread([this, epoch] { elected_(epoch); });
      return;
    }
    (void)client_->Call("/v3/lease/revoke", {{"ID", std::to_string(lease)}});
    if (!won.ok() || won->responses_size() == 0) return;
    const auto& read = won->responses(0).response_range().kvs();
    kvs.assign(read.begin(), read.end());
  }
  View seen;
  if (!kvs.empty()) {
    const EtcdJson value = EtcdJson::parse(kvs[0].value(), nullptr, false);
    seen.epoch = kvs[0].create_revision();
    if (value.is_object()) {
      seen.leader_id = value.value("id", std::string());
      seen.leader_address = value.value("address", std::string());
    }
  }
  std::lock_guard lock(mu_);
  view_ = seen;
}

Leadership::Renewal Leadership::Renew() {
  std::string why;
  if (Overdue()) {
    Duration since;
    {
      std::lock_guard lock(mu_);
      since = clock_.Now() - confirmed_;
    }
    why = "no keepalive of its lease succeeded for " + std::to_string(since.count()) + " ms";
  } else {
    const Timestamp asked = clock_.Now();
    Result<EtcdJson> alive = renewer_->Call("/v3/lease/keepalive", {{"ID", std::to_string(lease_)}},
                                            true, nullptr, RenewalTimeout());
    if (alive.ok()) {
      const EtcdJson& result = alive->value("result", EtcdJson::object());
      if (EtcdInt(result, "TTL") > 0 && HoldsKey(&why)) {
        std::lock_guard lock(mu_);
        longest_unconfirmed_ = std::max(longest_unconfirmed_, asked - confirmed_);
        confirmed_ = asked;
        renewed_ = std::max(renewed_, asked);  // a look may have proved a later time
        evidence_.Confirmed(static_cast<uint64_t>(
            EtcdInt(result.value("header", EtcdJson::object()), "raft_term")));
        ++confirmations_;
        return Renewal::kRenewed;
      }
      if (why.empty()) why = "etcd says its lease expired";
    } else {
      // The looks at etcd's raft (LookAtRaft) may have moved renewed_ on.
      if (!Overdue()) return Renewal::kRetry;
      why = "etcd did not renew its lease in time: " + alive.status().message();
    }
  }
  int64_t epoch = 0;
  {
    std::lock_guard lock(mu_);
    epoch = view_.epoch;
    view_ = View{};
  }
  if (starting_.joinable()) starting_.join();  // `lost` after `elected`, never during
  lost_("this berthd lost the leadership of epoch " + std::to_string(epoch) + ": " + why);
  return Renewal::kLost;
}

bool Leadership::Overdue() const {
  std::lock_guard lock(mu_);
  return clock_.Now() - renewed_ > RenewDeadline();
}

// The leadership key's kvs: empty when nobody leads.
Result<Leadership::Kvs> Leadership::ReadKey(Duration timeout) {
  pb::RangeRequest request;
  request.set_key(store_.Key(kKind, kId));
  Result<pb::RangeResponse> answer = client_->Range(request, timeout);
  if (!answer.ok()) return answer.status();
  return Kvs(answer->kvs().begin(), answer->kvs().end());
}

// Whether the leadership key is still the one this replica created (an
// operator may have deleted it); an unreadable key counts as held until the
// renewal deadline says otherwise.
bool Leadership::HoldsKey(std::string* why) {
  Result<Kvs> kvs = ReadKey(RenewalTimeout());
  if (!kvs.ok()) return true;
  const int64_t epoch = kvs->empty() ? 0 : (*kvs)[0].create_revision();
  if (epoch == view().epoch) return true;
  *why = "its leadership key was deleted or replaced (epoch now " + std::to_string(epoch) + ")";
  return false;
}

void Leadership::Compact() {
  // Bounded as a renewal's requests: a slow compaction must not hold the
  // next keepalive. A failure waits for next time.
  if (compact_to_ > 0) (void)store_.Compact(compact_to_, RenewalTimeout());
  std::lock_guard lock(mu_);
  compact_to_ = store_.revision();
  next_compaction_ = clock_.Now() + options_.compact_interval;
}

}  // namespace berth::daemon
