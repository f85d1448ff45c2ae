#include "node/host_facts.h"

#include <gtest/gtest.h>

namespace berth::node {
namespace {

TEST(HostFacts, TheMachineIsDescribedAsDockerNamesIt) {
  const HostFacts host = DetectHost();
  EXPECT_FALSE(host.hostname.empty());
  EXPECT_GE(host.milli_cpu, 1000);
  EXPECT_GT(host.memory_bytes, 0);
  EXPECT_EQ(host.os, "linux");
  EXPECT_NE(host.arch, "x86_64");
}

TEST(HostFacts, ArchitecturesAreGoNames) {
  EXPECT_EQ(DockerArch("x86_64"), "amd64");
  EXPECT_EQ(DockerArch("aarch64"), "arm64");
  EXPECT_EQ(DockerArch("i686"), "386");
  EXPECT_EQ(DockerArch("riscv64"), "riscv64");
}

TEST(HostFacts, TheLocalAddressTowardsLoopbackIsLoopback) {
  Result<std::string> address = LocalAddressTowards("127.0.0.1", 7480);
  ASSERT_TRUE(address.ok()) << address.status().message();
  EXPECT_EQ(*address, "127.0.0.1");
  EXPECT_FALSE(LocalAddressTowards("no-such-host.invalid", 7480).ok());
}

}  // namespace
}  // namespace berth::node
