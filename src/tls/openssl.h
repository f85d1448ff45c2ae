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

}  // namespace berth::tls
