#include "daemon/ca/cluster_ca.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "store/memory_store.h"
#include "store/test_dir.h"
#include "tls/certificate.h"
#include "tls/openssl.h"

namespace berth::daemon {
namespace {

// Whether `leaf` was signed by `root` (both PEM).
bool SignedBy(const std::string& leaf, const std::string& root) {
  Result<tls::X509Ptr> cert = tls::ReadCertificate(leaf);
  Result<tls::X509Ptr> ca = tls::ReadCertificate(root);
  if (!cert.ok() || !ca.ok()) return false;
  EVP_PKEY* key = X509_get0_pubkey(ca->get());
  return key != nullptr && X509_verify(cert->get(), key) == 1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Two replicas on one store (as on etcd): they share the unlock key, and
// each has a data directory of its own.
class ClusterCaReplicasTest : public testing::Test {
 protected:
  void SetUp() override {
    a_ = Open(dir_a_.path());
    ASSERT_NE(a_, nullptr);
    std::filesystem::copy_file(dir_a_.path() + "/ca-unlock-key", dir_b_.path() + "/ca-unlock-key");
    b_ = Open(dir_b_.path());
    ASSERT_NE(b_, nullptr);
    b_->Start(clock_);
  }
  std::unique_ptr<ClusterCa> Open(const std::string& dir) {
    ClusterCaOptions options;
    options.data_dir = dir;
    Result<std::unique_ptr<ClusterCa>> ca = ClusterCa::Open(store_, options);
    EXPECT_TRUE(ca.ok()) << ca.status().message();
    return ca.ok() ? std::move(*ca) : nullptr;
  }
  // Advances the clock by B's sync interval until `taken` holds (Start's
  // thread syncs on its own time), within a bound.
  bool BTakes(const std::function<bool()>& taken) {
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!taken() && std::chrono::steady_clock::now() < bound) {
      clock_.Advance(ClusterCaOptions{}.sync_interval);
      std::this_thread::yield();
    }
    return taken();
  }

  store::MemoryStore store_;
  store::TestDir dir_a_, dir_b_;
  ManualClock clock_;
  std::unique_ptr<ClusterCa> a_, b_;
};

TEST_F(ClusterCaReplicasTest, ARotationByOneReplicaReachesTheOtherWithoutARestart) {
  const std::string old_digest = a_->digest();
  ASSERT_EQ(b_->digest(), old_digest);
  const std::string old_root = b_->trust_pem();
  const std::string old_own = b_->client_credentials().cert_pem;

  ASSERT_TRUE(a_->Rotate().ok());
  const std::string new_digest = a_->digest();
  ASSERT_NE(new_digest, old_digest);
  // Taking a root ends with issuing B's own certificate again.
  ASSERT_TRUE(BTakes([&] { return b_->client_credentials().cert_pem != old_own; }));
  EXPECT_EQ(b_->digest(), new_digest);
  // B trusts both roots, in ca.pem too, and still presents a certificate
  // of the old root, which nodes that have not moved yet verify it with.
  EXPECT_EQ(b_->trust_pem(), a_->trust_pem());
  EXPECT_EQ(ReadFile(dir_b_.path() + "/ca.pem"), a_->trust_pem());
  EXPECT_EQ(tls::SplitBundle(b_->trust_pem())->size(), 2u);
  EXPECT_TRUE(SignedBy(b_->client_credentials().cert_pem, old_root));
  // B signs nodes with the new root.
  Result<tls::KeyAndCsr> csr = tls::NewKeyAndCsr("n1");
  ASSERT_TRUE(csr.ok());
  Result<tls::SignedLeaf> leaf = b_->Sign(csr->csr_pem, "n1", tls::kRoleNode);
  ASSERT_TRUE(leaf.ok()) << leaf.status().message();
  EXPECT_FALSE(SignedBy(leaf->cert_pem, old_root));

  ASSERT_TRUE(a_->FinishRotation().ok());
  ASSERT_TRUE(BTakes([&] { return !SignedBy(b_->client_credentials().cert_pem, old_root); }));
  EXPECT_EQ(b_->trust_pem(), a_->trust_pem());
  EXPECT_EQ(ReadFile(dir_b_.path() + "/ca.pem"), a_->trust_pem());
  EXPECT_EQ(tls::SplitBundle(b_->trust_pem())->size(), 1u);
  EXPECT_TRUE(SignedBy(b_->client_credentials().cert_pem, b_->trust_pem()));
}

// A replica that leads after another one's rotation carries it on, though
// its thread has not read the store since.
TEST_F(ClusterCaReplicasTest, AReplicaThatMissedARotationFinishesItFromTheStore) {
  const std::string old_digest = b_->digest();
  ASSERT_TRUE(a_->Rotate().ok());
  ASSERT_EQ(b_->digest(), old_digest);
  const Status finished = b_->FinishRotation();
  ASSERT_TRUE(finished.ok()) << finished.message();
  EXPECT_EQ(b_->digest(), a_->digest());
  EXPECT_EQ(tls::SplitBundle(b_->trust_pem())->size(), 1u);
  EXPECT_EQ(a_->FinishRotation().code(), StatusCode::kConflict);  // it read B's finish first
  EXPECT_EQ(a_->trust_pem(), b_->trust_pem());
}

TEST_F(ClusterCaReplicasTest, SyncChangesNothingWhenTheStoredRootIsTheSame) {
  const std::string own = b_->client_credentials().cert_pem;
  ASSERT_TRUE(b_->Sync().ok());
  EXPECT_EQ(b_->client_credentials().cert_pem, own);  // not issued again
}

}  // namespace
}  // namespace berth::daemon
