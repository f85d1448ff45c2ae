#include "tls/authority.h"

#include <gtest/gtest.h>

namespace berth::tls {
namespace {

const Timestamp kSignNow = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());

CertificateAuthority NewCa() {
  Result<CertificateAuthority> ca = CertificateAuthority::Create("c1", kSignNow);
  EXPECT_TRUE(ca.ok()) << ca.status().message();
  return std::move(*ca);
}

TEST(CertificateAuthorityTest, RootIsACaForItsClusterWithADigest) {
  CertificateAuthority ca = NewCa();
  Result<CertificateInfo> root = ParseCertificate(ca.cert_pem());
  ASSERT_TRUE(root.ok());
  EXPECT_TRUE(root->is_ca);
  EXPECT_EQ(root->identity.cluster, "c1");
  EXPECT_EQ(root->not_after - root->not_before, kRootLife);
  EXPECT_EQ(ca.digest().size(), 64u);
  EXPECT_EQ(ca.digest(), *CertificateDigest(ca.cert_pem()));
  EXPECT_NE(ca.digest(), NewCa().digest());
}

TEST(CertificateAuthorityTest, SignsACsrWithTheIdentityItDecides) {
  CertificateAuthority ca = NewCa();
  Result<KeyAndCsr> csr = NewKeyAndCsr("asked-for");
  ASSERT_TRUE(csr.ok());
  LeafRequest request{
      {"n1", kRoleNode, "c1"}, {"10.1.2.3", "n1.example"}, kSignNow, std::chrono::hours(1)};
  Result<SignedLeaf> leaf = ca.Sign(csr->csr_pem, request);
  ASSERT_TRUE(leaf.ok()) << leaf.status().message();
  Result<CertificateInfo> info = ParseCertificate(leaf->cert_pem);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(leaf->serial, info->serial);
  EXPECT_EQ(leaf->asked, "asked-for");
  EXPECT_EQ(info->identity.id, "n1");
  EXPECT_EQ(info->identity.role, kRoleNode);
  EXPECT_EQ(info->identity.cluster, "c1");
  EXPECT_FALSE(info->is_ca);
  EXPECT_EQ(info->names, (std::vector<std::string>{"10.1.2.3", "n1.example"}));
  EXPECT_EQ(info->not_before, std::chrono::floor<std::chrono::seconds>(kSignNow - kBackdate));
  EXPECT_EQ(info->not_after,
            std::chrono::floor<std::chrono::seconds>(kSignNow + std::chrono::hours(1)));
  EXPECT_TRUE(CheckKeyMatches(leaf->cert_pem, csr->key_pem).ok());
  EXPECT_NE(info->serial, ca.Sign(csr->csr_pem, request)->serial);
}

TEST(CertificateAuthorityTest, RefusesBadCsrsAndNames) {
  CertificateAuthority ca = NewCa();
  LeafRequest request{{"n1", kRoleNode, "c1"}, {}, kSignNow};
  EXPECT_FALSE(ca.Sign("not a csr", request).ok());
  EXPECT_FALSE(ca.Sign(std::string(kMaxPemBytes + 1, 'x'), request).ok());
  request.names = {"bad name!"};
  Result<SignedLeaf> bad = ca.Sign(NewKeyAndCsr("n1")->csr_pem, request);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("neither an IP address nor a DNS name"), std::string::npos);
}

TEST(CertificateAuthorityTest, IssuesKeyAndCertificate) {
  CertificateAuthority ca = NewCa();
  Result<KeyAndCert> issued =
      ca.Issue({{"berthd", kRoleManager, "c1"}, {"localhost", "127.0.0.1", "::1"}, kSignNow});
  ASSERT_TRUE(issued.ok());
  EXPECT_TRUE(CheckKeyMatches(issued->cert_pem, issued->key_pem).ok());
  EXPECT_EQ(ParseCertificate(issued->cert_pem)->names,
            (std::vector<std::string>{"localhost", "127.0.0.1", "::1"}));
  EXPECT_EQ(ParseCertificate(issued->cert_pem)->not_after -
                ParseCertificate(issued->cert_pem)->not_before,
            kDefaultCertLife + kBackdate);
}

TEST(CertificateAuthorityTest, LoadsWhatItMadeAndRefusesMismatches) {
  CertificateAuthority ca = NewCa();
  Result<CertificateAuthority> again = CertificateAuthority::Load(ca.cert_pem(), ca.key_pem());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->digest(), ca.digest());
  CertificateAuthority other = NewCa();
  EXPECT_FALSE(CertificateAuthority::Load(ca.cert_pem(), other.key_pem()).ok());
  Result<KeyAndCert> leaf = ca.Issue({{"x", kRoleNode, "c1"}, {}, kSignNow});
  Result<CertificateAuthority> not_ca = CertificateAuthority::Load(leaf->cert_pem, leaf->key_pem);
  ASSERT_FALSE(not_ca.ok());
  EXPECT_NE(not_ca.status().message().find("not a CA"), std::string::npos);
}

}  // namespace
}  // namespace berth::tls
