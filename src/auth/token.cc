#include "auth/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <string_view>

namespace berth::auth {
std::string NewSecret(size_t bytes) {
  std::random_device device;  // /dev/urandom on Linux
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    const unsigned value = device() & 0xff;
    out += kHex[value >> 4];
    out += kHex[value & 0xf];
  }
  return out;
}

Result<std::string> CreateTokenFile(const std::string& path, const std::string& token) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable("cannot create " + path + ": " + std::strerror(errno));
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  if (!written) return Status::Unavailable("cannot write " + path + ": " + std::strerror(errno));
  return token;
}

namespace {

bool IsTokenCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("-._~+/=").find(c) != std::string_view::npos;
}

Status CheckToken(const std::string& path, const std::string& token) {
  const std::string regenerate =
      "; write a token of " + std::to_string(kMinTokenLength) + " to " +
      std::to_string(kMaxTokenLength) +
      " characters there (letters, digits, - . _ ~ + / =), e.g. openssl rand -hex 32";
  if (token.empty()) return Status::InvalidArgument(path + " holds no token" + regenerate);
  if (token.size() < kMinTokenLength)
    return Status::InvalidArgument(path + " holds a token of " + std::to_string(token.size()) +
                                   " characters, too short to be safe" + regenerate);
  if (token.size() > kMaxTokenLength)
    return Status::InvalidArgument(path + " holds a token longer than " +
                                   std::to_string(kMaxTokenLength) + " characters" + regenerate);
  for (char c : token)
    if (!IsTokenCharacter(c))
      return Status::InvalidArgument(path +
                                     " holds a token with a character outside the token "
                                     "alphabet" +
                                     regenerate);
  return Status::Ok();
}

}  // namespace

Result<std::string> LoadOrCreateToken(const std::string& data_dir, MissingToken missing) {
  const std::string path = data_dir + "/token";
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 && errno == ENOENT) {
    if (missing == MissingToken::kCreate) return CreateTokenFile(path);
    return Status::InvalidArgument(
        path + " is missing, but the store in " + data_dir +
        " holds data: its clients have the old token and would all be refused. Restore the "
        "token file from a backup, or start with --new-token to issue a new one (then give "
        "every client the new token)");
  }
  return ReadToken(path);
}

Result<std::string> ReadToken(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return Status::Unavailable("cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return Status::InvalidArgument(path + " is not a regular file; the token must be a file");
  if ((info.st_mode & 077) != 0)
    return Status::InvalidArgument(path + " is accessible by other users; run: chmod 600 " + path);
  std::ifstream in(path);
  if (!in) return Status::Unavailable("cannot read " + path + ": " + std::strerror(errno));
  std::string token;
  std::getline(in, token);
  if (!token.empty() && token.back() == '\r') token.pop_back();
  BERTH_RETURN_IF_ERROR(CheckToken(path, token));
  return token;
}

}  // namespace berth::auth
