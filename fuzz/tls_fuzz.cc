// libFuzzer target: what Berth reads of TLS material from outside
// (tls/certificate.h, tls/seal.h): a CSR from a joining node, a peer's or a
// bundle's certificates, a sealed record from the store. Any input must give
// a value or an error, never a crash or a sanitizer report; a CSR that
// parses names no more than its CN, and a sealed text that opens under a
// fixed key was sealed with it (so changed bytes never open).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tls/certificate.h"
#include "tls/seal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)berth::tls::ParseCsr(text);
  (void)berth::tls::ParseCertificate(text);
  (void)berth::tls::CertificateDigest(text);
  if (berth::Result<std::vector<std::string>> bundle = berth::tls::SplitBundle(text); bundle.ok())
    for (const std::string& cert : *bundle)
      if (!berth::tls::ParseCertificate(cert).ok()) __builtin_trap();
  const std::string key(64, 'a');
  if (berth::Result<std::string> opened = berth::tls::Open(text, key); opened.ok())
    if (!berth::tls::Open(*berth::tls::Seal(*opened, key), key).ok()) __builtin_trap();
  return 0;
}
