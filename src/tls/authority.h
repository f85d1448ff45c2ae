// CertificateAuthority: the root that berthd (and berth-agent, for the
// nodes it fronts) signs certificates with (docs/security.md).
//
//  - Create: a new root, ECDSA P-256, self-signed, CA:TRUE with pathlen 0,
//    valid kRootLife (20 years, as SwarmKit's), subject "CN=berth-root-ca,
//    O=<cluster>".
//  - Sign: a leaf for a CSR. The CA, not the CSR, decides the subject
//    (CN = id, OU = role, O = cluster) and the names; the CSR gives only the
//    key. Leaves are valid from `now` - kBackdate (clocks differ by a few
//    minutes) to `now` + life, for both serverAuth and clientAuth, with a
//    random 128-bit serial.
//  - Issue: a key and a leaf at once, for the CA's own hosts (berthd's
//    server certificate).
// Thread-safe: const after construction.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/time.h"
#include "tls/certificate.h"

namespace berth::tls {

inline constexpr Duration kRootLife = std::chrono::hours(24 * 365 * 20);
inline constexpr Duration kBackdate = std::chrono::minutes(5);
// The default life of node, agent and server certificates (berthd --cert-expiry).
inline constexpr Duration kDefaultCertLife = std::chrono::hours(24 * 90);

struct LeafRequest {
  Identity identity;
  std::vector<std::string> names;  // subjectAltName entries: IP addresses or DNS names
  Timestamp now;
  Duration life = kDefaultCertLife;
};

struct KeyAndCert {
  std::string key_pem, cert_pem;
};

struct SignedLeaf {
  std::string cert_pem;
  std::string serial;  // as CertificateInfo::serial
  std::string asked;   // the CN the CSR asked for ("" when none); the leaf's is the request's
};

class CertificateAuthority {
 public:
  // A new root for `cluster`, valid from `now`.
  static Result<CertificateAuthority> Create(const std::string& cluster, Timestamp now);
  // An existing root: its certificate and key (an operator's --ca-cert and
  // --ca-key, or the stored one). InvalidArgument when they do not parse,
  // do not match, or the certificate is not a CA.
  static Result<CertificateAuthority> Load(const std::string& cert_pem, const std::string& key_pem);

  CertificateAuthority(CertificateAuthority&&) noexcept;
  CertificateAuthority& operator=(CertificateAuthority&&) noexcept;
  ~CertificateAuthority();

  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }
  // CertificateDigest of the root: what join tokens carry.
  const std::string& digest() const { return digest_; }

  // A leaf for the CSR's key (ParseCsr's checks first; the CSR is parsed
  // once).
  Result<SignedLeaf> Sign(std::string_view csr_pem, const LeafRequest& request) const;
  // A new key and its leaf.
  Result<KeyAndCert> Issue(const LeafRequest& request) const;

 private:
  struct Keys;
  CertificateAuthority(std::unique_ptr<Keys> keys, std::string cert_pem, std::string key_pem);

  std::unique_ptr<Keys> keys_;
  std::string cert_pem_, key_pem_, digest_;
};

}  // namespace berth::tls
