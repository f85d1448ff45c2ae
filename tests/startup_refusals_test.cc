// Issue 13, through the programs themselves: berthd, berth-agent and `berth
// up` refuse a port another process listens on (exit 1, "address already in
// use") instead of sharing it, and berth-agent refuses ids that break the
// naming rule (exit 2), each with a message on its output.
#include <gtest/gtest.h>

#include <fstream>

#include "process.h"
#include "store/test_dir.h"

namespace berth {
namespace {

using testing_support::PortInLine;
using testing_support::Process;

constexpr auto kBound = std::chrono::seconds(30);

// A berthd holding a port, for the others to collide with.
class PortHolder {
 public:
  explicit PortHolder(const std::string& data_dir)
      : berthd_({BERTHD_BINARY, "--data-dir", data_dir, "--port", "0"}) {
    port_ = PortInLine(berthd_.WaitForLine("listening on", kBound));
    const std::string sessions = berthd_.WaitForLine("node sessions", kBound);
    if (const size_t at = sessions.rfind("port "); at != std::string::npos)
      session_port_ = sessions.substr(at + 5);
  }
  const std::string& port() const { return port_; }
  const std::string& session_port() const { return session_port_; }

 private:
  Process berthd_;
  std::string port_, session_port_;
};

// Runs a program to its end; its exit status and what it printed.
Process::Exit RunToEnd(const std::vector<std::string>& argv) {
  Process process(argv, Process::Stderr::kMerge);
  return process.WaitExit(kBound);
}

TEST(StartupRefusals, EveryProgramRefusesAPortInUse) {
  store::TestDir dir;
  PortHolder holder(dir.path() + "/holder");
  ASSERT_FALSE(holder.port().empty());
  const std::string in_use = "127.0.0.1:" + holder.port() + ": address already in use";
  const std::vector<std::vector<std::string>> programs = {
      {BERTHD_BINARY, "--data-dir", dir.path() + "/second", "--port", holder.port()},
      {BERTH_AGENT_BINARY, "--simulate", "4", "--data-dir", dir.path() + "/agent", "--port",
       holder.port()},
      {BERTH_BINARY, "up", "--once", "--data-dir", dir.path() + "/up", "--port", holder.port()}};
  for (const std::vector<std::string>& argv : programs) {
    const Process::Exit exit = RunToEnd(argv);
    ASSERT_TRUE(WIFEXITED(exit.status)) << argv[0] << ": " << exit.output;
    EXPECT_EQ(WEXITSTATUS(exit.status), 1) << argv[0] << ": " << exit.output;
    EXPECT_NE(exit.output.find(in_use), std::string::npos) << argv[0] << ": " << exit.output;
    EXPECT_EQ(exit.output.find("listening"), std::string::npos) << exit.output;
  }
}

// The gRPC ports too (berthd's node sessions, an agent's calls), with the
// reason (gRPC itself says only that its server did not start); gRPC's
// SO_REUSEPORT once let the second berthd start and share the port.
TEST(StartupRefusals, TheGrpcPortsInUseAreRefusedWithTheReason) {
  store::TestDir dir;
  PortHolder holder(dir.path() + "/holder");
  ASSERT_FALSE(holder.session_port().empty());
  const std::string in_use = " on 127.0.0.1:" + holder.session_port() + ": address already in use";
  const std::vector<std::pair<std::vector<std::string>, std::string>> programs = {
      {{BERTHD_BINARY, "--data-dir", dir.path() + "/second", "--port", "0", "--session-port",
        holder.session_port()},
       "cannot listen for node sessions" + in_use},
      {{BERTH_AGENT_BINARY, "--simulate", "4", "--data-dir", dir.path() + "/agent", "--port", "0",
        "--rpc-port", holder.session_port()},
       "cannot listen for agent calls" + in_use}};
  for (const auto& [argv, refusal] : programs) {
    const Process::Exit exit = RunToEnd(argv);
    ASSERT_TRUE(WIFEXITED(exit.status)) << argv[0] << ": " << exit.output;
    EXPECT_EQ(WEXITSTATUS(exit.status), 1) << argv[0] << ": " << exit.output;
    EXPECT_NE(exit.output.find(refusal), std::string::npos) << argv[0] << ": " << exit.output;
  }
}

TEST(StartupRefusals, BerthAgentRefusesIdsOutsideTheNamingRule) {
  store::TestDir dir;
  const Process::Exit bad_id = RunToEnd(
      {BERTH_AGENT_BINARY, "--id", "a/b", "--simulate", "4", "--data-dir", dir.path() + "/a"});
  ASSERT_TRUE(WIFEXITED(bad_id.status));
  EXPECT_EQ(WEXITSTATUS(bad_id.status), 2);
  EXPECT_NE(bad_id.output.find("--id: 'a/b' is not a valid id"), std::string::npos)
      << bad_id.output;
  const std::string nodes = dir.path() + "/nodes.yaml";
  std::ofstream(nodes) << "nodes:\n  - id: n1\n  - {id: n2, labels: {\"a b\": x}}\n";
  const Process::Exit bad_label = RunToEnd(
      {BERTH_AGENT_BINARY, "--nodes", nodes, "--port", "0", "--data-dir", dir.path() + "/b"});
  ASSERT_TRUE(WIFEXITED(bad_label.status));
  EXPECT_EQ(WEXITSTATUS(bad_label.status), 2);
  EXPECT_NE(bad_label.output.find("nodes[1].labels: 'a b' is not a valid label key"),
            std::string::npos)
      << bad_label.output;
}

}  // namespace
}  // namespace berth
