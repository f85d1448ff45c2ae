// EtcdClient: calls etcd's v3 API (etcd 3.4, the Debian package) through
// its gRPC services (KV, Lease, Watch; Maintenance for
// RaftViews), over TLS when given etcd's CA (and
// then with a client certificate when given one, for etcd's
// --client-cert-auth), else plaintext. One HTTP/2 connection per member
// carries every call in flight, from every thread.
//
// The store's hot calls (Txn, Range, Watch) take and answer etcd's own
// protobuf messages. The rare ones (the leader election's leases, a
// compaction) go through `Call`, which takes the JSON shapes of etcd's v3
// gateway: protobuf's JSON mapping of the same messages (snake_case names,
// int64 as strings, bytes as base64). This class is the one place that
// knows the transport (docs/ha.md, "How it works").
//
// Unary calls (`Call`) go to the member that answered last; a call that
// certainly had no effect (no connection could be made, or the member has
// no leader) moves on to the next member, for up to `retry_for`. Any other
// failure is returned: a write that timed out or whose connection broke may
// have been applied, so only its caller can decide whether to try again (a
// conditioned write retried would see its own effect as a conflict).
//
// Watches (`Watch`) run on the caller's thread until the receiver says
// stop, the stream breaks or `Cancel` is called from another thread. gRPC's
// keepalive pings find a connection that died silently.
//
// Errors: Unavailable for connection failures and etcd's refusals of the
// moment (no leader, timeouts, a full database), InvalidArgument for
// refusals of the request itself (a compacted revision, too many operations
// in a transaction, a missing lease).
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"

namespace grpc {
class ClientContext;
class Status;
}  // namespace grpc

namespace berth::store {

using EtcdJson = nlohmann::json;

struct EtcdClientOptions {
  // "host:port" of the members (at least one).
  std::vector<std::string> endpoints;
  // How long one request may take (default 5 s).
  std::chrono::milliseconds request_timeout{5000};
  // How long a call keeps trying other members when none answers or has a
  // leader (default 10 s: etcd elects a new leader within about a second
  // of its default election timeout, more on a loaded machine).
  std::chrono::milliseconds retry_for{10000};
  // PEM files, as etcdctl's --cacert, --cert and --key (default: none).
  // With ca_file, every call is over TLS and etcd's certificate must chain
  // to it and name the endpoint's host; cert_file and key_file (both or
  // neither) are the certificate berthd presents. Watched by gRPC (read
  // again every minute), so renewed files are picked up.
  std::string ca_file, cert_file, key_file;
};

// The gateway's int64 fields are JSON strings ("41"); absent means 0.
int64_t EtcdInt(const EtcdJson& object, const char* field);
// The first key after every key that starts with `prefix` (a range_end).
std::string PrefixEnd(std::string prefix);

class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // KV.Txn, KV.Range. `read_only`: the call changes nothing, so any failure
  // may be retried on another member. `*unknown` (when given) is set when a
  // failed write may have applied (it timed out, or its connection broke
  // with it in flight).
  Result<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request,
                                        bool read_only = false, bool* unknown = nullptr);
  // `timeout` (when not zero) replaces the request timeout of the options
  // for this call.
  Result<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request,
                                            std::chrono::milliseconds timeout = {});

  // Makes the call the gateway serves at `path` ("/v3/kv/compaction",
  // "/v3/lease/grant", "/v3/lease/revoke" or "/v3/lease/keepalive": one
  // round of the keepalive stream, answered as {"result": ...}) with
  // `body`, and returns etcd's answer; `read_only` and `unknown` as Txn's,
  // `timeout` as Range's.
  Result<EtcdJson> Call(std::string_view path, const EtcdJson& body, bool read_only = false,
                        bool* unknown = nullptr, std::chrono::milliseconds timeout = {});

  // A stream's handle: Cancel ends its Watch call from another thread.
  class StreamHandle {
   public:
    void Cancel();

   private:
    friend class EtcdClient;
    std::mutex mu_;
    bool cancelled_ = false;
    grpc::ClientContext* context_ = nullptr;  // while streaming
  };
  // Opens a Watch stream with `request` and hands each answer to `receive`
  // until it returns false, the stream ends or `handle` is cancelled; tries
  // each member once to connect. Returns why the stream ended (Ok when
  // `receive` stopped it).
  Status Watch(const etcdserverpb::WatchRequest& request, StreamHandle& handle,
               const std::function<bool(const etcdserverpb::WatchResponse&)>& receive);

  // What the members say of etcd's raft (Maintenance.Status), asked of
  // every endpoint at once, within `timeout`: one view for each endpoint
  // that answered, in the order they answered.
  struct RaftView {
    uint64_t member_id = 0;
    uint64_t leader = 0;     // 0: it knows no leader
    uint64_t raft_term = 0;  // the term of the last entry it applied
  };
  std::vector<RaftView> RaftViews(std::chrono::milliseconds timeout);

  const EtcdClientOptions& options() const { return options_; }

  struct Member;  // one endpoint's channel and stubs (etcd_client.cc)

 private:
  // Makes `attempt` on the preferred member, then on the others while it
  // certainly had no effect, for up to retry_for (see the class comment).
  Status Invoke(const std::function<grpc::Status(Member&, grpc::ClientContext&)>& attempt,
                bool read_only, bool* unknown, std::chrono::milliseconds timeout = {});

  EtcdClientOptions options_;
  std::atomic<size_t> preferred_{0};  // the endpoint that answered last
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace berth::store
