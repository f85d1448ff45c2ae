// NodeTls: a berth-node's certificate and what it trusts (docs/security.md,
// "Joining"), kept in its data directory: ca.pem (the cluster's trust
// bundle), node-key.pem (mode 0600) and node-cert.pem.
//
// Joining over the network, a machine trusts nothing yet. Its join token
// ("BERTH-1-<digest>-<secret>") carries the digest of the cluster's root,
// so it first reads GET /v1/ca without checking the server, keeps the
// bundle only when a certificate in it has that digest, and from then on
// verifies berthd against it: the token's secret is sent only to a server
// whose certificate chains to that root. Each registration and renewal
// sends a CSR for a new key; the key becomes current with the certificate
// berthd returns for it.
//
// Renewal: at a random point between 50% and 80% of the certificate's
// life (SwarmKit's), or at once when berthd's CA digest changes (a
// rotation). Thread-safe.
#pragma once

#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "core/status.h"
#include "core/time.h"
#include "tls/context.h"

namespace berth::node {

// The digest a join token carries, or "" for a token without one (a
// cluster on plain HTTP).
std::string JoinTokenDigest(const std::string& token);

class NodeTls {
 public:
  explicit NodeTls(std::string data_dir) : dir_(std::move(data_dir)) {}

  // Reads the files a joined node kept; false when there are none.
  // InvalidArgument when they are damaged or do not belong together.
  Result<bool> Load();
  // Reads berthd's trust bundle at `server` (an https:// URL) without
  // verifying it, and keeps it when it holds the root `digest` names.
  // PermissionDenied when it does not: whoever answers is not the
  // cluster the token is for.
  Status TrustFrom(const std::string& server, const std::string& digest);

  // A CSR for a new key (kept aside until Accept).
  Result<std::string> NewCsr(const std::string& node);
  // Takes the certificate berthd returned for the last CSR, and the bundle.
  Status Accept(const std::string& cert_pem, const std::string& trust_pem);

  // What the node presents and trusts now.
  tls::Credentials credentials() const;
  bool has_trust() const;
  bool has_certificate() const;
  // The digest of the root that issued the certificate (the bundle's newest).
  std::string root_digest() const;
  // Whether the certificate is due for renewal: past its renewal point, or
  // issued by another root than `ca_digest` (when given).
  bool Due(const std::string& ca_digest) const;

 private:
  Status Save() const;
  void ScheduleRenewal();

  const std::string dir_;
  mutable std::mutex mu_;
  tls::Credentials current_;
  std::string pending_key_;
  Timestamp renew_at_{};
  std::string digest_;  // of the root in current_.trust_pem that issued the certificate
  std::mt19937_64 random_{std::random_device{}()};
};

}  // namespace berth::node
