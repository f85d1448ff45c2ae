#include "tls/certificate.h"

#include <arpa/inet.h>
#include <openssl/core_names.h>
#include <openssl/obj_mac.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tls/openssl.h"

namespace berth::tls {

std::string LastError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

BioPtr ReadBio(std::string_view text) {
  if (text.size() > kMaxPemBytes) return nullptr;
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
}

namespace {

Status TooLarge(const char* what) {
  return Status::InvalidArgument(std::string(what) + " is larger than " +
                                 std::to_string(kMaxPemBytes) + " bytes");
}

std::string Hex(const unsigned char* data, size_t size, const char* digits) {
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

std::string NameEntry(X509_NAME* name, int nid) {
  const int at = X509_NAME_get_index_by_NID(name, nid, -1);
  if (at < 0) return "";
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, at));
  unsigned char* utf8 = nullptr;
  const int size = ASN1_STRING_to_UTF8(&utf8, data);
  if (size < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(size));
  OPENSSL_free(utf8);
  return out;
}

Timestamp TimeOf(const ASN1_TIME* t) {
  struct tm parts = {};
  if (ASN1_TIME_to_tm(t, &parts) != 1) return Timestamp{};
  return std::chrono::time_point_cast<Duration>(
      std::chrono::system_clock::from_time_t(timegm(&parts)));
}

std::string IpText(const ASN1_OCTET_STRING* ip) {
  const int size = ASN1_STRING_length(ip);
  char text[INET6_ADDRSTRLEN] = {};
  if (size != 4 && size != 16) return "";
  inet_ntop(size == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(ip), text, sizeof text);
  return text;
}

std::vector<std::string> NamesOf(X509* cert) {
  std::vector<std::string> names;
  auto* sans =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (sans == nullptr) return names;
  for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
    if (n->type == GEN_DNS) {
      const ASN1_STRING* s = n->d.dNSName;
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                         static_cast<size_t>(ASN1_STRING_length(s)));
    } else if (n->type == GEN_IPADD) {
      names.push_back(IpText(n->d.iPAddress));
    }
  }
  GENERAL_NAMES_free(sans);
  return names;
}

}  // namespace

Result<X509Ptr> ReadCertificate(std::string_view pem) {
  BioPtr bio = ReadBio(pem);
  if (!bio) return TooLarge("the certificate");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return Status::InvalidArgument("not a PEM certificate: " + LastError());
  return cert;
}

Result<KeyPtr> ReadKey(std::string_view pem) {
  BioPtr bio = ReadBio(pem);
  if (!bio) return TooLarge("the key");
  // No passphrase callback: an encrypted key is refused, not prompted for.
  KeyPtr key(PEM_read_bio_PrivateKey(
      bio.get(), nullptr, [](char*, int, int, void*) { return 0; }, nullptr));
  if (!key) return Status::InvalidArgument("not an unencrypted PEM private key: " + LastError());
  return key;
}

std::string WriteCertificate(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioText(bio.get());
}

std::string WriteKey(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return BioText(bio.get());
}

Result<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Status::Internal("cannot make a P-256 key: " + LastError());
  return key;
}

bool IsP256(EVP_PKEY* key) {
  if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return false;
  char curve[64] = {};
  size_t size = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, curve, sizeof curve, &size) !=
      1)
    return false;
  return std::string_view(curve, size) == "prime256v1";
}

std::string SerialOf(const X509* cert) {
  const ASN1_INTEGER* serial = X509_get0_serialNumber(cert);
  return Hex(ASN1_STRING_get0_data(serial), static_cast<size_t>(ASN1_STRING_length(serial)),
             "0123456789ABCDEF");
}

Result<CertificateInfo> ParseCertificate(std::string_view pem) {
  Result<X509Ptr> cert = ReadCertificate(pem);
  if (!cert.ok()) return cert.status();
  X509* x = cert->get();
  CertificateInfo info;
  X509_NAME* subject = X509_get_subject_name(x);
  info.identity = {NameEntry(subject, NID_commonName),
                   NameEntry(subject, NID_organizationalUnitName),
                   NameEntry(subject, NID_organizationName)};
  info.serial = SerialOf(x);
  info.not_before = TimeOf(X509_get0_notBefore(x));
  info.not_after = TimeOf(X509_get0_notAfter(x));
  info.names = NamesOf(x);
  info.is_ca = X509_check_ca(x) != 0;
  return info;
}

Result<std::string> CertificateDigest(std::string_view pem) {
  Result<X509Ptr> cert = ReadCertificate(pem);
  if (!cert.ok()) return cert.status();
  unsigned char* der = nullptr;
  const int size = i2d_X509(cert->get(), &der);
  if (size <= 0) return Status::InvalidArgument("cannot encode the certificate");
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(der, static_cast<size_t>(size), digest);
  OPENSSL_free(der);
  return Hex(digest, sizeof digest, "0123456789abcdef");
}

Result<std::vector<std::string>> SplitBundle(std::string_view pem) {
  constexpr std::string_view kEnd = "-----END CERTIFICATE-----";
  if (pem.size() > kMaxPemBytes) return TooLarge("the bundle");
  std::vector<std::string> certs;
  size_t from = 0;
  for (size_t end; (end = pem.find(kEnd, from)) != std::string_view::npos;) {
    std::string one(pem.substr(from, end + kEnd.size() - from));
    one += '\n';
    if (Result<X509Ptr> cert = ReadCertificate(one); !cert.ok()) return cert.status();
    certs.push_back(std::move(one));
    from = end + kEnd.size();
  }
  if (certs.empty()) return Status::InvalidArgument("no PEM certificate in the bundle");
  return certs;
}

Result<KeyAndCsr> NewKeyAndCsr(const std::string& id) {
  Result<KeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  ReqPtr req(X509_REQ_new());
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(id.c_str()), -1, -1, 0);
  if (X509_REQ_set_pubkey(req.get(), key->get()) != 1 ||
      X509_REQ_sign(req.get(), key->get(), EVP_sha256()) <= 0)
    return Status::Internal("cannot sign the request: " + LastError());
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509_REQ(bio.get(), req.get());
  return KeyAndCsr{WriteKey(key->get()), BioText(bio.get())};
}

Result<ReqPtr> ReadCsr(std::string_view pem) {
  BioPtr bio = ReadBio(pem);
  if (!bio) return TooLarge("the certificate signing request");
  ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req) return Status::InvalidArgument("not a PEM certificate signing request: " + LastError());
  EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());
  if (key == nullptr || !IsP256(key))
    return Status::InvalidArgument("the certificate signing request's key is not ECDSA P-256");
  if (X509_REQ_verify(req.get(), key) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("the certificate signing request's signature does not hold");
  }
  return req;
}

std::string CommonNameOf(X509_REQ* req) {
  return NameEntry(X509_REQ_get_subject_name(req), NID_commonName);
}

Result<CsrInfo> ParseCsr(std::string_view pem) {
  Result<ReqPtr> req = ReadCsr(pem);
  if (!req.ok()) return req.status();
  return CsrInfo{CommonNameOf(req->get())};
}

Status CheckPrivateKey(std::string_view pem) { return ReadKey(pem).status(); }

Status CheckKeyMatches(std::string_view cert_pem, std::string_view key_pem) {
  Result<X509Ptr> cert = ReadCertificate(cert_pem);
  if (!cert.ok()) return cert.status();
  Result<KeyPtr> key = ReadKey(key_pem);
  if (!key.ok()) return key.status();
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("the key is not the certificate's");
  }
  return Status::Ok();
}

Result<std::string> ReadPemFile(const std::string& path, bool secret) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return Status::InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  if (secret && (info.st_mode & 077) != 0)
    return Status::InvalidArgument(path + " can be read by group or others: chmod 600 " + path);
  if (info.st_size > static_cast<off_t>(kMaxPemBytes))
    return Status::InvalidArgument(path + " is larger than a PEM file Berth reads");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace berth::tls
