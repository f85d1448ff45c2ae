// Certificates, keys and signing requests as Berth uses them (docs/security.md):
// X.509 in PEM, keys ECDSA P-256. Who a certificate speaks for is its
// subject, as SwarmKit's: CN = the node or agent id, OU = the role, O = the
// cluster.
//
// Parsing takes untrusted input (a CSR from a joining node, a peer's
// certificate): every parser bounds its input (kMaxPemBytes) and answers
// InvalidArgument saying what is wrong, never more.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/time.h"

namespace berth::tls {

// The roles in a certificate's OU.
inline constexpr const char* kRoleManager = "manager";  // berthd
inline constexpr const char* kRoleNode = "node";        // berth-node
inline constexpr const char* kRoleAgent = "agent";      // berth-agent

// The largest PEM text (a certificate, key, CSR or bundle) Berth reads.
inline constexpr size_t kMaxPemBytes = 16 * 1024;

struct Identity {
  std::string id;       // CN
  std::string role;     // OU: kRoleManager, kRoleNode or kRoleAgent
  std::string cluster;  // O
};

struct CertificateInfo {
  Identity identity;
  std::string serial;  // hex, upper case
  Timestamp not_before, not_after;
  std::vector<std::string> names;  // subjectAltName: DNS names and IP addresses
  bool is_ca = false;
};

// A PEM certificate's subject, serial, life and names.
Result<CertificateInfo> ParseCertificate(std::string_view pem);

// The digest a join token carries: SHA-256 of the certificate's DER, as 64
// lower-case hex characters. InvalidArgument for text that is not one PEM
// certificate.
Result<std::string> CertificateDigest(std::string_view pem);

// Every certificate of a PEM bundle (a trust bundle holds one root, or two
// during a rotation), in order; InvalidArgument when there is none.
Result<std::vector<std::string>> SplitBundle(std::string_view pem);

struct KeyAndCsr {
  std::string key_pem;  // PKCS#8, to be kept with mode 0600
  std::string csr_pem;
};

// A new P-256 key and a signing request for `identity` (a CSR names only
// the CN; the CA decides the rest).
Result<KeyAndCsr> NewKeyAndCsr(const std::string& id);

struct CsrInfo {
  std::string id;  // its CN, "" when it names none
};

// A CSR whose self-signature holds and whose key is P-256: what it asks for.
Result<CsrInfo> ParseCsr(std::string_view pem);

// A PEM private key's text is one (InvalidArgument otherwise).
Status CheckPrivateKey(std::string_view pem);

// Whether the certificate's public key is the key's (a key file and a
// certificate file given together must belong together).
Status CheckKeyMatches(std::string_view cert_pem, std::string_view key_pem);

// The text of a PEM file an operator or a program names (a CA, a key, a
// certificate): InvalidArgument, saying why, when it cannot be read, is
// larger than kMaxPemBytes, or (`secret`: a private key) can be read by
// group or others. Its contents are not parsed here.
Result<std::string> ReadPemFile(const std::string& path, bool secret = false);

}  // namespace berth::tls
