#include "tls/certificate.h"

#include <gtest/gtest.h>

#include "tls/authority.h"

namespace berth::tls {
namespace {

TEST(CsrTest, ParsesItsOwnRequests) {
  Result<KeyAndCsr> made = NewKeyAndCsr("n7");
  ASSERT_TRUE(made.ok());
  Result<CsrInfo> csr = ParseCsr(made->csr_pem);
  ASSERT_TRUE(csr.ok()) << csr.status().message();
  EXPECT_EQ(csr->id, "n7");
  EXPECT_TRUE(CheckPrivateKey(made->key_pem).ok());
}

TEST(CsrTest, RefusesGarbageOversizedAndTamperedRequests) {
  EXPECT_FALSE(ParseCsr("").ok());
  EXPECT_FALSE(
      ParseCsr("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
          .ok());
  Result<CsrInfo> big = ParseCsr(std::string(kMaxPemBytes + 1, 'A'));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("larger than"), std::string::npos);
  // One character of the base64 body changed: the signature no longer holds
  // or the DER no longer parses; either way it is refused.
  std::string pem = NewKeyAndCsr("n7")->csr_pem;
  const size_t at = pem.find('\n') + 40;
  pem[at] = pem[at] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(ParseCsr(pem).ok());
}

TEST(BundleTest, SplitsRootsAndRefusesEmptyOrBad) {
  const Timestamp now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  std::string a = CertificateAuthority::Create("c", now)->cert_pem();
  std::string b = CertificateAuthority::Create("c", now)->cert_pem();
  Result<std::vector<std::string>> both = SplitBundle(a + b);
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  EXPECT_EQ(*CertificateDigest((*both)[1]), *CertificateDigest(b));
  EXPECT_FALSE(SplitBundle("").ok());
  EXPECT_FALSE(SplitBundle("junk -----END CERTIFICATE-----").ok());
}

TEST(CertificateTest, RefusesWhatIsNotACertificate) {
  EXPECT_FALSE(ParseCertificate("hello").ok());
  EXPECT_FALSE(CertificateDigest("").ok());
  EXPECT_FALSE(
      CheckPrivateKey("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n").ok());
}

}  // namespace
}  // namespace berth::tls
