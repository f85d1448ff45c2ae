#include "node/host_facts.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstring>

namespace berth::node {

HostFacts DetectHost() {
  HostFacts facts;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) == 0) facts.hostname = name;
  facts.milli_cpu = std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN)) * int64_t{1000};
  facts.memory_bytes = int64_t{::sysconf(_SC_PHYS_PAGES)} * ::sysconf(_SC_PAGESIZE);
  struct utsname uts {};
  if (::uname(&uts) == 0) {
    facts.os = uts.sysname;
    for (char& c : facts.os) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    facts.arch = DockerArch(uts.machine);
  }
  return facts;
}

std::string DockerArch(std::string_view machine) {
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  if (machine == "i386" || machine == "i686") return "386";
  return std::string(machine);
}

Result<std::string> LocalAddressTowards(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    return Status::Unavailable("cannot resolve '" + host + "'");
  std::string address;
  const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* ip =
        local.ss_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
            : &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr;
    if (::inet_ntop(local.ss_family, ip, text, sizeof(text)) != nullptr) address = text;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  if (address.empty()) return Status::Unavailable("no route to '" + host + "'");
  return address;
}

}  // namespace berth::node
