#include "daemon/token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

namespace berth::daemon {
namespace {

std::string RandomHex(size_t bytes) {
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

Result<std::string> Create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable("cannot create " + path + ": " + std::strerror(errno));
  const std::string token = RandomHex(32);
  const std::string line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  if (!written) return Status::Unavailable("cannot write " + path + ": " + std::strerror(errno));
  return token;
}

}  // namespace

Result<std::string> LoadOrCreateToken(const std::string& data_dir) {
  const std::string path = data_dir + "/token";
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 && errno == ENOENT) return Create(path);
  return ReadToken(path);
}

Result<std::string> ReadToken(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return Status::Unavailable("cannot read " + path + ": " + std::strerror(errno));
  if ((info.st_mode & 077) != 0)
    return Status::InvalidArgument(path + " is accessible by other users; run: chmod 600 " + path);
  std::ifstream in(path);
  if (!in) return Status::Unavailable("cannot read " + path);
  std::string token;
  std::getline(in, token);
  if (token.empty()) return Status::InvalidArgument(path + " is empty");
  return token;
}

}  // namespace berth::daemon
