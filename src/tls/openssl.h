// Owning handles for OpenSSL's objects, and reading and writing them as
// PEM. Internal to src/tls.
#pragma once

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"

namespace berth::tls {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using ReqPtr = std::unique_ptr<X509_REQ, Deleter<X509_REQ_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Deleter<X509_NAME_free>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;

// OpenSSL's last error, in words ("unknown"), and clears its queue.
std::string LastError();

// A read-only BIO over `text`, or null when it is larger than kMaxPemBytes.
BioPtr ReadBio(std::string_view text);
// What a memory BIO holds.
std::string BioText(BIO* bio);

Result<X509Ptr> ReadCertificate(std::string_view pem);
Result<KeyPtr> ReadKey(std::string_view pem);
std::string WriteCertificate(X509* cert);
std::string WriteKey(EVP_PKEY* key);
// A new ECDSA P-256 key.
Result<KeyPtr> NewKey();

// A P-256 key only: Berth's certificates all use one curve.
bool IsP256(EVP_PKEY* key);

// A PEM CSR whose key is P-256 and whose self-signature holds (ParseCsr's
// checks). OpenSSL 3 decodes a key through its provider lookups, a large
// part of signing a join (docs/benchmarks.md): parse a CSR once.
Result<ReqPtr> ReadCsr(std::string_view pem);
// A CSR's common name ("" when it names none).
std::string CommonNameOf(X509_REQ* req);
// A certificate's serial, hex, upper case (CertificateInfo::serial).
std::string SerialOf(const X509* cert);

}  // namespace berth::tls
