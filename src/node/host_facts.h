// HostFacts: what berth-node tells berthd of its machine when it joins
// (docs/agent.md, "berth-node"): CPUs and memory (the node's resources for
// placement), OS and architecture (its platform, named as Docker names
// them: "linux", "amd64"), hostname, and the address berthd reaches it on.
// Plain functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace berth::node {

struct HostFacts {
  std::string hostname;
  int64_t milli_cpu = 0;     // online CPUs x 1000
  int64_t memory_bytes = 0;  // physical memory
  std::string os, arch;      // "linux", "amd64"
};

HostFacts DetectHost();

// Go's (and Docker's) name of a uname machine: x86_64 -> amd64, aarch64 ->
// arm64, i686 -> 386; others as they are.
std::string DockerArch(std::string_view machine);

// The local IP address this machine reaches `host` from (the source address
// the kernel picks for a UDP socket connected to host:port; nothing is
// sent). Unavailable when `host` does not resolve or has no route.
Result<std::string> LocalAddressTowards(const std::string& host, int port);

}  // namespace berth::node
