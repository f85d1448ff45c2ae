#include "tls/seal.h"

#include <gtest/gtest.h>

namespace berth::tls {
namespace {

const std::string kKey(64, 'a');

TEST(SealTest, OpensWhatItSealedAndNothingElse) {
  Result<std::string> sealed = Seal("the CA's key", kKey);
  ASSERT_TRUE(sealed.ok());
  EXPECT_EQ(sealed->find("the CA"), std::string::npos);
  EXPECT_EQ(*Open(*sealed, kKey), "the CA's key");
  EXPECT_NE(*Seal("the CA's key", kKey), *sealed);  // a new nonce each time
  EXPECT_FALSE(Open(*sealed, std::string(64, 'b')).ok());
  std::string changed = *sealed;
  changed[10] = changed[10] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(Open(changed, kKey).ok());
  EXPECT_FALSE(Open("v1:", kKey).ok());
  EXPECT_FALSE(Open("v2:abcd", kKey).ok());
  EXPECT_FALSE(Seal("x", "short").ok());
  EXPECT_EQ(*Open(*Seal("", kKey), kKey), "");
}

TEST(SealTest, HashIsSha256Hex) {
  EXPECT_EQ(HashSecret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace berth::tls
