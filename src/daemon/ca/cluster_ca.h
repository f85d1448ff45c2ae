// ClusterCa: berthd's certificate authority (docs/security.md), as
// SwarmKit's ca/ package.
//
//  - The root is made at the first start (tls::CertificateAuthority::Create),
//    or is the operator's (--ca-cert/--ca-key). It is kept in the store
//    (kind "ca", id "root": {"cluster", "cert", "key"}), so every replica on
//    etcd signs with the same root, its key sealed (tls::Seal) under the
//    unlock key: <data_dir>/ca-unlock-key (mode 0600, made with the root),
//    or the file --ca-unlock-key-file names, which every replica must share.
//  - The trust bundle (the root's certificate; the old and the new during a
//    rotation) is written to <data_dir>/ca.pem, where `berth` finds it.
//  - berthd's own certificate (role manager, CN = its id, names: the
//    hostname, localhost, 127.0.0.1, ::1, every address of this machine's
//    interfaces and the advertised ones) is issued at each start (written
//    with its key, mode 0600 as the unlock key beside it, for berthd's node
//    session server: server_files), and again at a random point between 50% and 80% of its
//    life (Start's thread). berthd serves with it and presents it as a
//    client (to berth-node's log server).
//  - Nodes' certificates: Sign, from the CSR a node sends at join and
//    at renewal (CN = node id, OU = node, O = cluster), valid `cert_life`.
//  - Rotation (Rotate, `berth ca rotate`): a new root is made and trusted
//    beside the old one. Nodes' certificates are signed by the new root
//    from then on, and a node renews at once when its heartbeat answer
//    names a root other than its certificate's, taking the bundle of both
//    roots with it; berthd's own certificate stays the old root's, which
//    every node trusts, until FinishRotation, when it moves to the new root
//    and the old one is dropped. No node restarts; a node that was away
//    for the whole rotation must join again.
//  - Other replicas (etcd): each reads the stored root again every
//    `sync_interval` (Sync), and a new leader at once, so a rotation made by
//    one replica reaches the others without a restart.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "store/store.h"
#include "tls/authority.h"
#include "tls/context.h"

namespace berth::daemon {

inline constexpr const char* kCaKind = "ca";

struct ClusterCaOptions {
  std::string data_dir;         // where ca.pem and ca-unlock-key are. Required.
  std::string ca_cert_file;     // the operator's root certificate; "" (default): make one
  std::string ca_key_file;      // and its key (mode 0600); with ca_cert_file
  std::string unlock_key_file;  // "" (default): <data_dir>/ca-unlock-key
  Duration cert_life = tls::kDefaultCertLife;  // of node, agent and berthd certificates (90 days)
  std::string id = "berthd";                   // CN of the host's own certificate
  std::string role = tls::kRoleManager;        // its OU: manager (berthd) or agent (berth-agent)
  std::vector<std::string> names;  // more names for berthd's certificate (--advertise-addr's host)
  // Write the host's certificate and key to cert_file() and key_file() at
  // each issue, for the node session server (berthd). Default false: the
  // key stays in memory (berth-agent).
  bool server_files = false;
  // More roots whose client certificates the host's HTTPS server accepts
  // (berth-agent --manager-ca: berthd's CA). Default none. Not in ca.pem:
  // nodes do not trust them.
  std::string client_trust_pem;
  // How often Start's thread reads the stored root again (Sync). Default
  // 10 s: one read of one key, so another replica's rotation is taken
  // within that time.
  Duration sync_interval = std::chrono::seconds(10);
};

class ClusterCa {
 public:
  // Reads the stored root (or stores a new one), writes ca.pem and issues
  // berthd's certificate. InvalidArgument: the operator's files do not
  // form a CA, another root is stored already, or the unlock key is
  // missing or wrong for the stored root (the message says which file to
  // copy); Unavailable: the store cannot be reached.
  static Result<std::unique_ptr<ClusterCa>> Open(store::Store& store, ClusterCaOptions options);

  // What berthd serves HTTPS with.
  std::shared_ptr<tls::ServerTls> server_tls() const { return server_tls_; }
  // berthd as a client: its certificate, key and the trust bundle.
  tls::Credentials client_credentials() const;
  std::string trust_pem() const;
  // The files of the host's certificate, its key (mode 0600; both with
  // server_files) and the trust bundle, kept current: what the node session
  // server watches.
  std::string cert_file() const { return options_.data_dir + "/server-cert.pem"; }
  std::string key_file() const { return options_.data_dir + "/server-key.pem"; }
  std::string bundle_file() const { return options_.data_dir + "/ca.pem"; }
  // The digest of the current root, which join tokens carry.
  std::string digest() const;
  // {"digest", "cert" (the bundle), "rotating", "not_after"}: GET /v1/ca.
  std::string Describe() const;

  // A certificate for `id` in `role` from the CSR (tls::ParseCsr's checks;
  // a CSR naming another CN is PermissionDenied), with `names` (a node's
  // address, which berthd checks when it reads the node's logs).
  Result<tls::SignedLeaf> Sign(std::string_view csr_pem, const std::string& id,
                               const std::string& role, std::vector<std::string> names = {}) const;

  // A secret sealed under the unlock key (tls::Seal), and opened: what the
  // store keeps of a secret berthd must show again (the node join token).
  Result<std::string> Seal(std::string_view secret) const;
  Result<std::string> Unseal(std::string_view sealed) const;

  // A new root, trusted with the old one. Conflict while a rotation is
  // under way.
  Status Rotate();
  // Drops the old root. Conflict when no rotation is under way.
  Status FinishRotation();
  // Reads the stored root and, if another replica changed it since (a
  // rotation or its finish), takes it as Rotate or FinishRotation would
  // have here: the bundle, ca.pem and the host's certificate. Unavailable:
  // the store cannot be reached (nothing changes).
  Status Sync();

  // Renews the host's own certificate at 50-80% of its life and calls Sync
  // every sync_interval, waiting on `clock` (not owned; outlives this).
  // Stop before destruction.
  void Start(const Clock& clock);
  void Stop();
  ~ClusterCa() { Stop(); }

 private:
  ClusterCa(store::Store& store, ClusterCaOptions options, std::string unlock_key);
  Status Load();
  // The stored root (and old root), unsealed; refused if `given` (the
  // operator's --ca-cert) is another. Under change_mu_, or from Open.
  Status AdoptStored(const store::StoredObject& stored, const tls::CertificateAuthority* given);
  Status SyncLocked();  // under change_mu_
  Status Adopt(tls::CertificateAuthority root, std::unique_ptr<tls::CertificateAuthority> previous);
  Status IssueOwn();
  Status Persist(const tls::CertificateAuthority& root, const tls::CertificateAuthority* previous,
                 int64_t expected_revision);
  std::string BundleLocked() const;  // under mu_
  Status WriteBundle() const;

  store::Store& store_;
  ClusterCaOptions options_;
  std::string unlock_key_;
  std::string cluster_;
  std::shared_ptr<tls::ServerTls> server_tls_;
  // Held through a change of root (Load, Rotate, FinishRotation, Sync), so
  // revision_ and the root it names change together.
  std::mutex change_mu_;
  mutable std::mutex mu_;
  std::unique_ptr<tls::CertificateAuthority> root_;
  std::unique_ptr<tls::CertificateAuthority> previous_;  // the old root during a rotation
  int64_t revision_ = 0;                                 // of the stored record
  tls::KeyAndCert own_;
  Timestamp own_renewal_{};  // when own_ is renewed (real time)
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread renewer_;
};

// The names berthd's certificate carries: the hostname, localhost,
// 127.0.0.1, ::1 and the addresses of this machine's interfaces.
std::vector<std::string> LocalNames();

}  // namespace berth::daemon
