#include "auth/token.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "store/test_dir.h"

namespace berth::auth {
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
  std::ofstream(path) << std::string(64, 's') << "\n";
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

// Issue 13: a deleted token file was silently replaced, locking every client
// out with 401 and no hint why.
TEST(Token, AMissingFileIsRefusedWhenTheStoreHoldsDataWithTheWayOut) {
  store::TestDir dir;
  Result<std::string> token = LoadOrCreateToken(dir.path(), MissingToken::kRefuse);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(token.status().message().find(dir.path() + "/token is missing, but the store"),
            std::string::npos)
      << token.status().message();
  EXPECT_NE(token.status().message().find("--new-token"), std::string::npos);
  struct stat info {};
  EXPECT_NE(stat((dir.path() + "/token").c_str(), &info), 0) << "nothing was created";
}

TEST(Token, ATokenShorterThan32CharactersIsRefused) {
  store::TestDir dir;
  const std::string path = dir.path() + "/token";
  std::ofstream(path) << "abcde\n";
  chmod(path.c_str(), 0600);
  Result<std::string> token = LoadOrCreateToken(dir.path());
  ASSERT_FALSE(token.ok());
  EXPECT_NE(token.status().message().find("a token of 5 characters, too short"), std::string::npos)
      << token.status().message();
  std::ofstream(path) << std::string(32, 'k') << "\n";
  EXPECT_EQ(*LoadOrCreateToken(dir.path()), std::string(32, 'k'));
  std::ofstream(path) << std::string(31, 'k') << " \n";
  EXPECT_FALSE(LoadOrCreateToken(dir.path()).ok()) << "a space is not a token character";
}

TEST(Token, ADirectoryGetsAdviceAboutFilesNotPermissions) {
  store::TestDir dir;
  const std::string path = dir.path() + "/token";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  Result<std::string> token = LoadOrCreateToken(dir.path());
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().message(), path + " is not a regular file; the token must be a file");
  EXPECT_EQ(ReadToken(path).status().message(), token.status().message());
}

}  // namespace
}  // namespace berth::auth
