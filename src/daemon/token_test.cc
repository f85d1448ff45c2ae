#include "daemon/token.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "store/test_dir.h"

namespace berth::daemon {
namespace {

TEST(Token, CreatedOnceWithMode0600AndReadBack) {
  store::TestDir dir;
  Result<std::string> first = LoadOrCreateToken(dir.path());
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->size(), 64u);
  EXPECT_EQ(first->find_first_not_of("0123456789abcdef"), std::string::npos);
  struct stat info {};
  ASSERT_EQ(stat((dir.path() + "/token").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  Result<std::string> again = LoadOrCreateToken(dir.path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
}

TEST(Token, TwoDataDirectoriesGetDifferentTokens) {
  store::TestDir a, b;
  EXPECT_NE(*LoadOrCreateToken(a.path()), *LoadOrCreateToken(b.path()));
}

TEST(Token, AFileOthersCanReadIsRefused) {
  store::TestDir dir;
  const std::string path = dir.path() + "/token";
  std::ofstream(path) << "secret\n";
  chmod(path.c_str(), 0644);
  Result<std::string> token = LoadOrCreateToken(dir.path());
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().message(),
            path + " is accessible by other users; run: chmod 600 " + path);
}

TEST(Token, AnEmptyFileIsRefused) {
  store::TestDir dir;
  const std::string path = dir.path() + "/token";
  std::ofstream(path) << "";
  chmod(path.c_str(), 0600);
  EXPECT_EQ(LoadOrCreateToken(dir.path()).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace berth::daemon
