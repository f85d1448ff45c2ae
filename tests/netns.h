// TestNetwork: N hosts on one machine for a multi-host integration test,
// each a Linux network namespace with its own eth0, all plugged into a Linux
// bridge that lives in a "switch" namespace of its own. Nothing is created
// in the root namespace (no link, no address, no route): the hosts reach
// each other through the bridge only, and the test reaches them by running
// a program inside one (Prefix) or a function on a thread that joined one
// (RunIn). Cut(i) sets the switch-side end of host i's cable down, a
// partition of that host; Restore(i) plugs it back.
//
//   switch ns "berth-<pid>-sw": br0, with ports v0 .. v<N-1>
//   host ns   "berth-<pid>-h<i>": lo, eth0 (peer of v<i>) 10.77.<pid%250+1>.<i+1>/24
//
// The third octet comes from the test's pid, and so do the namespaces'
// names, so concurrent tests neither collide nor share a name (each network
// is isolated anyway: its bridge reaches only its own hosts). Every command
// is iproute2's `ip`, run with fork/exec (no shell), and its exit status is
// checked. The destructor deletes every namespace it created, which removes
// the veths and the bridge with them. Root only; tests skip with
// Unavailable()'s reason. Tests only; not thread-safe.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "process.h"

namespace berth::testing_support {

class TestNetwork {
 public:
  static constexpr const char* kIp = "/usr/bin/ip";
  static constexpr const char* kNsenter = "/usr/bin/nsenter";

  // Why this machine cannot build a TestNetwork ("" when it can): it
  // creates a namespace, a bridge and a veth pair in it, and deletes them.
  static std::string Unavailable() {
    if (::geteuid() != 0) return "needs root (network namespaces)";
    for (const char* program : {kIp, kNsenter})
      if (::access(program, X_OK) != 0) return std::string("needs ") + program;
    const std::string probe = "berth-" + std::to_string(::getpid()) + "-probe";
    std::string why = Ip({"netns", "add", probe});
    if (!why.empty()) return "ip netns add failed: " + why;
    why = Ip({"-n", probe, "link", "add", "name", "br0", "type", "bridge"});
    if (why.empty())
      why = Ip({"-n", probe, "link", "add", "name", "va", "type", "veth", "peer", "name", "vb"});
    const std::string del = Ip({"netns", "del", probe});
    if (!why.empty()) return "ip link add (bridge, veth) failed: " + why;
    if (!del.empty()) return "ip netns del failed: " + del;
    return "";
  }

  // Builds the network; error() says what failed (and what was built is
  // deleted again).
  explicit TestNetwork(int hosts) : octet_(::getpid() % 250 + 1) {
    const std::string prefix = "berth-" + std::to_string(::getpid()) + "-";
    switch_ = prefix + "sw";
    for (int i = 0; i < hosts; ++i) hosts_.push_back(prefix + "h" + std::to_string(i));
    if (!Add(switch_) || !Run({"-n", switch_, "link", "add", "name", "br0", "type", "bridge"}) ||
        !Run({"-n", switch_, "link", "set", "br0", "up"})) {
      Delete();
      return;
    }
    for (int i = 0; i < hosts; ++i) {
      const std::string& host = hosts_[i];
      const std::string port = "v" + std::to_string(i);
      if (!Add(host) ||
          !Run({"-n", switch_, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0",
                "netns", host}) ||
          !Run({"-n", switch_, "link", "set", port, "master", "br0"}) ||
          !Run({"-n", switch_, "link", "set", port, "up"}) ||
          !Run({"-n", host, "link", "set", "lo", "up"}) ||
          !Run({"-n", host, "addr", "add", Address(i) + "/24", "dev", "eth0"}) ||
          !Run({"-n", host, "link", "set", "eth0", "up"})) {
        Delete();
        return;
      }
    }
  }
  ~TestNetwork() { Delete(); }
  TestNetwork(const TestNetwork&) = delete;
  TestNetwork& operator=(const TestNetwork&) = delete;

  // "" once built; else the failed command and what it said.
  const std::string& error() const { return error_; }

  // Host i's address on eth0.
  std::string Address(int i) const {
    return "10.77." + std::to_string(octet_) + "." + std::to_string(i + 1);
  }
  // Host i's namespace, and the switch's.
  const std::string& Namespace(int i) const { return hosts_[i]; }
  const std::string& SwitchNamespace() const { return switch_; }

  // Partitions host i (its switch port down: nothing it sends arrives, and
  // nothing reaches it), and ends the partition.
  bool Cut(int i) { return Run({"-n", switch_, "link", "set", "v" + std::to_string(i), "down"}); }
  bool Restore(int i) { return Run({"-n", switch_, "link", "set", "v" + std::to_string(i), "up"}); }

  // The argv prefix that runs a program inside host i: nsenter joins the
  // network namespace and execs the program, so the pid a Process gets is
  // the program's own. Not `ip netns exec`, which also execs but first
  // unshares the mount namespace and mounts a fresh /sys over the old one:
  // the program would not see the cgroup hierarchies mounted under
  // /sys/fs/cgroup, and a berth-node there would not enforce limits.
  std::vector<std::string> Prefix(int i) const {
    return {kNsenter, "--net=/run/netns/" + hosts_[i], "--"};
  }

  // Runs `f` on a thread that joined host i's network namespace (the
  // sockets it opens are host i's), and waits for it. False when the
  // namespace could not be joined (f not run).
  bool RunIn(int i, const std::function<void()>& f) const {
    bool joined = false;
    std::thread thread([&] {
      const int fd = ::open(("/run/netns/" + hosts_[i]).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return;
      joined = ::setns(fd, CLONE_NEWNET) == 0;
      ::close(fd);
      if (joined) f();
    });
    thread.join();
    return joined;
  }

  // The namespaces named like this process's TestNetworks that exist.
  static std::vector<std::string> Leftovers() {
    const std::string prefix = "berth-" + std::to_string(::getpid()) + "-";
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/run/netns", ec))
      if (entry.path().filename().string().starts_with(prefix))
        found.push_back(entry.path().filename());
    return found;
  }

 private:
  // Runs `ip args`; "" when it exits 0, else the command and its output.
  static std::string Ip(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kIp};
    argv.insert(argv.end(), args.begin(), args.end());
    Process ip(argv, Process::Stderr::kMerge);
    const Process::Exit exit = ip.WaitExit(std::chrono::seconds(20));
    if (exit.status == 0) return "";
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    return command + ": " +
           (exit.status < 0          ? "timed out"
            : WIFEXITED(exit.status) ? "exit status " + std::to_string(WEXITSTATUS(exit.status))
                                     : "wait status " + std::to_string(exit.status)) +
           ": " + exit.output;
  }
  bool Run(const std::vector<std::string>& args) {
    const std::string why = Ip(args);
    if (!why.empty() && error_.empty()) error_ = why;
    return why.empty();
  }
  bool Add(const std::string& name) {
    if (!Run({"netns", "add", name})) return false;
    created_.push_back(name);
    return true;
  }
  void Delete() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) Run({"netns", "del", *it});
    created_.clear();
  }

  int octet_;
  std::string switch_;
  std::vector<std::string> hosts_;
  std::vector<std::string> created_;
  std::string error_;
};

}  // namespace berth::testing_support
