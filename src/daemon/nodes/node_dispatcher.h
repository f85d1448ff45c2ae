// NodeDispatcher: berthd's side of berth-node machines (docs/agent.md):
// who they are, whether they are alive, and what they may do. As
// SwarmKit's dispatcher:
//  - Registration (Register): a machine joins with the cluster's node join
//    token and gets its node (id: its hostname) and a credential of its
//    own, which it keeps and uses from then on. The node object holds what
//    the machine detected (resources, platform, address), its engine labels
//    and "berth_node" (its machine id, endpoint and whether resource limits
//    are enforced). The node registering again with its credential (a
//    restarted berth-node) updates its node instead of adding one; the
//    join token for an id that has joined is a Conflict.
//  - Heartbeats (Heartbeat): a node is marked down once no heartbeat came
//    for heartbeat_period x grace_multiplier (found by a scan at most every
//    tenth of a period), and ready at its next one.
//    Heartbeat times are kept in memory only (a heartbeat writes nothing),
//    and a berthd that starts gives every node a fresh grace period.
//  - Credentials (Authenticate): the admin's API token is the ApiServer's;
//    this maps the join token and every node's credential to their
//    principals. The join token is kept in the store (kind "node_token"),
//    made when first asked for, and can be rotated; nodes that joined keep
//    their credentials.
// Removal (Remove, DELETE /v1/nodes/{id}): a ready node only with force,
// as Docker's `node rm`. A removed berth-node's identity is denied, as
// Swarm denies a removed node's certificate: its credential is revoked and
// its machine id recorded (kind "node_removed", id: the machine), in the
// commit that removes the node, so that berthd refuses the node's requests
// (Authenticate gives Principal::kRemovedNode: 403 node_removed, which
// berth-node stops on) and the machine's registrations, also after a
// restart. The machine comes back as a new machine: a berth-node whose data
// directory lost its node.json makes a new machine id (docs/agent.md).
//
// Certificates (docs/security.md), when the host has a CA: a machine joins
// with a CSR beside the join token and gets the node's certificate (and
// the CA's trust bundle); a node renews it with Renew; the heartbeat answer
// carries the CA's digest, so that a node learns of a rotation. The serials
// a node was given are kept with its credential, and denied with it at
// removal: a removed node's certificate is refused on every request
// (Authenticate) until it expires.
//
// Thread-safe: the API's threads call everything but Start and Stop, which
// the owner calls; a monitor thread marks nodes down, waiting on the
// injected clock.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "api/http_server.h"
#include "api/json_fields.h"
#include "core/status.h"
#include "core/time.h"
#include "daemon/ca/cluster_ca.h"
#include "daemon/nodes/node_executor.h"
#include "daemon/nodes/node_lifecycle_options.h"
#include "daemon/registry/node_registry.h"
#include "store/store.h"

namespace berth::daemon {

// A join token with a CA: "BERTH-1-<CA digest, 64 hex>-<secret, 64 hex>".
inline constexpr const char* kJoinTokenPrefix = "BERTH-1-";

// Its heartbeat_period and grace_multiplier; the loop takes the graces.
using NodeDispatcherOptions = NodeLifecycleOptions;

class NodeDispatcher {
 public:
  // `notify` tells the control loop that a node's state changed. `ca`
  // (null: no certificates) signs nodes' certificates; with it, a
  // registration must carry a CSR. None of the references is owned; all
  // outlive the dispatcher.
  NodeDispatcher(store::Store& store, NodeRegistry& nodes, NodeExecutor& executor,
                 const Clock& clock, std::function<void()> notify,
                 NodeDispatcherOptions options = {}, const ClusterCa* ca = nullptr);
  ~NodeDispatcher() { Stop(); }

  // Reads the credentials and the join token, and starts every node's
  // grace period now. Before Start.
  Status Load();
  void Start();
  void Stop();

  // `peer`: the request's verified client certificate, or null; a removed
  // node's certificate is kRemovedNode whatever the token.
  std::optional<api::Principal> Authenticate(std::string_view token,
                                             api::Peer peer = nullptr) const;
  // The join token; the first call makes it (an idle berthd writes nothing).
  Result<std::string> JoinToken();
  // A new join token; the old one stops working at once.
  Result<std::string> RotateJoinToken();

  // POST /v1/node/register (docs/api.md): {"node", "credential",
  // "heartbeat_period"}, and with a CA {"certificate", "ca"}. A machine whose node was removed is
  // refused (PermissionDenied, with *machine_removed set when given) and nothing is written. A
  // node changed meanwhile (the monitor marking it down as it restarts) is read again: that
  // race is not the caller's to handle.
  Result<api::Json> Register(const api::Json& body, const api::Principal& who,
                             bool* machine_removed = nullptr);
  // POST /v1/node/heartbeat: {"heartbeat_period", "assignments_revision",
  // "instance"} (NodeExecutor::ChangedFor), and "ca_digest" with a CA.
  // NotFound: the node was removed.
  Result<api::Json> Heartbeat(const std::string& node);
  // POST /v1/node/certificate: a new certificate for `node` from the CSR
  // in `body` ({"csr"}): {"certificate", "ca"}. InvalidArgument without a
  // CA or with a bad CSR.
  Result<api::Json> Renew(const std::string& node, const api::Json& body);
  // The hash of a berth-node's credential (tls::HashSecret; on plain HTTP
  // berthd presents it to the node's log server, which checks it against
  // its credential); nullopt for other nodes.
  std::optional<std::string> CredentialHashOf(const std::string& node) const;
  // Removes a node (DELETE /v1/nodes/{id}): a ready one only with `force`
  // (Conflict otherwise, NodeRegistry::Remove). A berth-node's credential
  // goes and its machine is denied, in the same commit.
  Status Remove(const std::string& node, bool force);
  // Called after a berth-node's removal committed (its session is closed
  // at once). Set before the API serves.
  void OnRemoved(std::function<void(const std::string& node)> hook) {
    on_removed_ = std::move(hook);
  }
  // The refusal of a node removed from the cluster: what happened and how
  // the machine joins again.
  static std::string RemovedMessage(const std::string& node);
  Duration grace() const { return options_.heartbeat_grace(); }
  // How late, at most, the monitor marks a silent node down after its
  // grace: it scans at most this often (a tenth of the period).
  Duration monitor_tick() const { return options_.heartbeat_period / 10; }
  // The CA that signs nodes' certificates, or null.
  const ClusterCa* ca() const { return ca_; }
  // Heartbeats taken so far (berth_node_heartbeats_total).
  uint64_t heartbeats() const { return heartbeats_.load(); }

 private:
  // One attempt of Register; *raced when the node changed between its
  // read and the commit.
  Result<api::Json> RegisterOnce(const api::Json& body, const api::Principal& who,
                                 bool* machine_removed, bool* raced);
  void Monitor();
  Result<std::string> Rotate();
  // Marks down the nodes silent past their grace; returns when to look next.
  Timestamp MarkSilentDown(Timestamp now);
  Status SetState(const std::string& node, const char* state);
  // The certificate for `id` from the registration's CSR, with the writes
  // that record its serial: {"certificate", "ca"} into `answer`.
  Status Certify(const std::string& id, const std::string& credential_hash, const api::Json& body,
                 api::Json& answer, std::vector<store::Write>& writes);
  // The credential record of `node` (the credential's hash) with `serial`
  // added (the newest few).
  std::string CredentialRecord(const std::string& node, const std::string& credential,
                               const std::string& serial) const;

  store::Store& store_;
  NodeRegistry& nodes_;
  std::atomic<uint64_t> heartbeats_{0};
  NodeExecutor& executor_;
  const Clock& clock_;
  std::function<void()> notify_;
  NodeDispatcherOptions options_;

  std::mutex rotate_mu_;  // held while the join token is made or replaced
  mutable std::shared_mutex credentials_mu_;
  std::string join_token_, join_hash_;
  // Credentials by their hash (tls::HashSecret): only hashes are stored.
  std::unordered_map<std::string, std::string> node_by_credential_;
  std::unordered_map<std::string, std::string> credential_by_node_;
  std::unordered_map<std::string, std::string> removed_by_credential_;  // revoked: their nodes
  std::unordered_map<std::string, std::vector<std::string>> serials_by_node_;  // newest last
  std::unordered_map<std::string, std::string> removed_by_serial_;  // revoked certificates
  const ClusterCa* ca_;

  // Held while a node's state is decided and written, one of them per node
  // (StateLockOf): joins of different nodes commit together (the store's
  // group commit), where one lock for all made each wait for the last's
  // fsync.
  std::mutex& StateLockOf(const std::string& node);
  std::array<std::mutex, 64> state_mu_;
  std::mutex mu_;  // heartbeats and the monitor's sets
  std::condition_variable wake_;
  std::unordered_map<std::string, Timestamp> last_heartbeat_;
  std::unordered_set<std::string> down_;  // marked down by the monitor, or stored so
  bool stopping_ = false;
  std::thread monitor_;
  std::function<void(const std::string&)> on_removed_;
};

}  // namespace berth::daemon
