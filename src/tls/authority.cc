#include "tls/authority.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/rand.h>

#include "tls/openssl.h"

namespace berth::tls {

struct CertificateAuthority::Keys {
  X509Ptr cert;
  KeyPtr key;
};

namespace {

using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

void AddName(X509_NAME* name, int nid, const std::string& value) {
  if (value.empty()) return;
  X509_NAME_add_entry_by_NID(name, nid, MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0);
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return Status::InvalidArgument("cannot add " + std::string(OBJ_nid2sn(nid)) + " '" + value +
                                   "': " + LastError());
  return Status::Ok();
}

Status SetRandomSerial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Status::Internal("no random bytes");
  bytes[0] &= 0x7f;  // positive, as RFC 5280 asks
  std::unique_ptr<BIGNUM, Deleter<BN_free>> bn(BN_bin2bn(bytes, sizeof bytes, nullptr));
  ASN1_INTEGER* serial = X509_get_serialNumber(cert);
  return BN_to_ASN1_INTEGER(bn.get(), serial) ? Status::Ok()
                                              : Status::Internal("cannot set the serial");
}

Status SetLife(X509* cert, Timestamp now, Duration backdate, Duration life) {
  const time_t start = std::chrono::system_clock::to_time_t(now - backdate);
  const time_t end = std::chrono::system_clock::to_time_t(now + life);
  if (!ASN1_TIME_set(X509_getm_notBefore(cert), start) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert), end))
    return Status::InvalidArgument("cannot set the certificate's life");
  return Status::Ok();
}

// "IP:10.0.0.1,DNS:host" from names, each an address or a DNS name.
Result<std::string> SubjectAltNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    unsigned char buf[16];
    const bool ip =
        inet_pton(AF_INET, n.c_str(), buf) == 1 || inet_pton(AF_INET6, n.c_str(), buf) == 1;
    if (!ip && (n.empty() ||
                n.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != std::string::npos))
      return Status::InvalidArgument("'" + n + "' is neither an IP address nor a DNS name");
    if (!out.empty()) out += ',';
    out += (ip ? "IP:" : "DNS:") + n;
  }
  return out;
}

Result<X509Ptr> NewCertificate(EVP_PKEY* subject_key, X509* issuer, EVP_PKEY* issuer_key,
                               const LeafRequest& request, bool ca) {
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  if (Status s = SetRandomSerial(cert.get()); !s.ok()) return s;
  if (Status s = SetLife(cert.get(), request.now, ca ? Duration{0} : kBackdate, request.life);
      !s.ok())
    return s;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  AddName(subject, NID_organizationName, request.identity.cluster);
  AddName(subject, NID_organizationalUnitName, request.identity.role);
  AddName(subject, NID_commonName, request.identity.id);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : subject);
  X509_set_pubkey(cert.get(), subject_key);
  X509* signer = issuer ? issuer : cert.get();
  const std::vector<std::pair<int, std::string>> extensions =
      ca ? std::vector<std::pair<int, std::string>>{{NID_basic_constraints,
                                                     "critical,CA:TRUE,pathlen:0"},
                                                    {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                                    {NID_subject_key_identifier, "hash"}}
         : std::vector<std::pair<int, std::string>>{
               {NID_basic_constraints, "critical,CA:FALSE"},
               {NID_key_usage, "critical,digitalSignature,keyAgreement"},
               {NID_ext_key_usage, "serverAuth,clientAuth"},
               {NID_subject_key_identifier, "hash"},
               {NID_authority_key_identifier, "keyid:always"}};
  for (const auto& [nid, value] : extensions)
    if (Status s = AddExtension(cert.get(), signer, nid, value); !s.ok()) return s;
  if (!request.names.empty()) {
    Result<std::string> sans = SubjectAltNames(request.names);
    if (!sans.ok()) return sans.status();
    if (Status s = AddExtension(cert.get(), signer, NID_subject_alt_name, *sans); !s.ok()) return s;
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) <= 0)
    return Status::Internal("cannot sign the certificate: " + LastError());
  return cert;
}

}  // namespace

CertificateAuthority::CertificateAuthority(std::unique_ptr<Keys> keys, std::string cert_pem,
                                           std::string key_pem)
    : keys_(std::move(keys)), cert_pem_(std::move(cert_pem)), key_pem_(std::move(key_pem)) {
  if (Result<std::string> digest = CertificateDigest(cert_pem_); digest.ok()) digest_ = *digest;
}
CertificateAuthority::CertificateAuthority(CertificateAuthority&&) noexcept = default;
CertificateAuthority& CertificateAuthority::operator=(CertificateAuthority&&) noexcept = default;
CertificateAuthority::~CertificateAuthority() = default;

Result<CertificateAuthority> CertificateAuthority::Create(const std::string& cluster,
                                                          Timestamp now) {
  Result<KeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  LeafRequest root{{"berth-root-ca", "", cluster}, {}, now, kRootLife};
  Result<X509Ptr> cert = NewCertificate(key->get(), nullptr, key->get(), root, /*ca=*/true);
  if (!cert.ok()) return cert.status();
  auto keys = std::make_unique<Keys>();
  std::string cert_pem = WriteCertificate(cert->get()), key_pem = WriteKey(key->get());
  keys->cert = std::move(*cert);
  keys->key = std::move(*key);
  return CertificateAuthority(std::move(keys), std::move(cert_pem), std::move(key_pem));
}

Result<CertificateAuthority> CertificateAuthority::Load(const std::string& cert_pem,
                                                        const std::string& key_pem) {
  Result<X509Ptr> cert = ReadCertificate(cert_pem);
  if (!cert.ok()) return Status::InvalidArgument("the CA certificate: " + cert.status().message());
  Result<KeyPtr> key = ReadKey(key_pem);
  if (!key.ok()) return Status::InvalidArgument("the CA key: " + key.status().message());
  if (X509_check_ca(cert->get()) == 0)
    return Status::InvalidArgument(
        "the CA certificate is not a CA's (no basicConstraints CA:TRUE)");
  if (Status s = CheckKeyMatches(cert_pem, key_pem); !s.ok())
    return Status::InvalidArgument("the CA key is not the CA certificate's");
  auto keys = std::make_unique<Keys>();
  keys->cert = std::move(*cert);
  keys->key = std::move(*key);
  return CertificateAuthority(std::move(keys), cert_pem, key_pem);
}

Result<SignedLeaf> CertificateAuthority::Sign(std::string_view csr_pem,
                                              const LeafRequest& request) const {
  Result<ReqPtr> req = ReadCsr(csr_pem);
  if (!req.ok()) return req.status();
  Result<X509Ptr> cert = NewCertificate(X509_REQ_get0_pubkey(req->get()), keys_->cert.get(),
                                        keys_->key.get(), request, /*ca=*/false);
  if (!cert.ok()) return cert.status();
  return SignedLeaf{WriteCertificate(cert->get()), SerialOf(cert->get()), CommonNameOf(req->get())};
}

Result<KeyAndCert> CertificateAuthority::Issue(const LeafRequest& request) const {
  Result<KeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  Result<X509Ptr> cert =
      NewCertificate(key->get(), keys_->cert.get(), keys_->key.get(), request, /*ca=*/false);
  if (!cert.ok()) return cert.status();
  return KeyAndCert{WriteKey(key->get()), WriteCertificate(cert->get())};
}

}  // namespace berth::tls
