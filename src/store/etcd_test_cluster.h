// EtcdTestCluster: real etcd members (the Debian etcd-server's
// /usr/bin/etcd, or $BERTH_ETCD) on free loopback ports, in a temporary
// directory, for the store contract tests and the HA end-to-end tests. Each
// member is a child process stopped by its pid; the destructor kills every
// member still running and removes the directory. Elections use etcd's
// default timing (100 ms heartbeats, 1 s election timeout: shorter ones
// made a loaded 2-core machine elect again and again), and a member that
// returns does not disrupt the leader (--pre-vote).
//
// Tests only; one thread.
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/test_dir.h"
#include "tls/authority.h"

namespace berth::store {

// PEM files for members that serve TLS (etcd's --cert-file, --key-file,
// --trusted-ca-file with --client-cert-auth): `cert` must name 127.0.0.1
// and be good for server and client use (members speak TLS to each other
// too).
struct EtcdTestTls {
  std::string ca_file, cert_file, key_file;
};

// Writes under `dir` the CA's certificate (ca.pem) and a new key and
// certificate of it for 127.0.0.1 and localhost named `name` (NAME.pem,
// NAME-key.pem), and returns the three files.
inline EtcdTestTls WriteEtcdTestTls(const tls::CertificateAuthority& ca, const std::string& dir,
                                    const std::string& name) {
  const Timestamp now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  const tls::KeyAndCert leaf =
      ca.Issue({{name, "etcd", "test"}, {"127.0.0.1", "localhost"}, now}).value();
  EtcdTestTls files{dir + "/ca.pem", dir + "/" + name + ".pem", dir + "/" + name + "-key.pem"};
  for (const auto& [path, text] : {std::pair{files.ca_file, ca.cert_pem()},
                                   {files.cert_file, leaf.cert_pem},
                                   {files.key_file, leaf.key_pem}})
    std::ofstream(path) << text;
  return files;
}

// A loopback port nothing listens on now (the kernel's choice).
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0)
    port = ntohs(address.sin_port);
  close(fd);
  return port;
}

class EtcdTestCluster {
 public:
  // `flags` go to every member (e.g. "--max-txn-ops=1024"); with `tls`,
  // members serve clients and peers over mutual TLS only.
  explicit EtcdTestCluster(int members, std::vector<std::string> flags = {},
                           std::optional<EtcdTestTls> tls = std::nullopt)
      : flags_(std::move(flags)), tls_(std::move(tls)) {
    const char* binary = std::getenv("BERTH_ETCD");
    binary_ = binary != nullptr ? binary : "/usr/bin/etcd";
    if (access(binary_.c_str(), X_OK) != 0) {
      error_ = binary_ + " is missing: scripts/setup installs etcd-server";
      return;
    }
    std::string initial;
    for (int i = 0; i < members; ++i) {
      members_.push_back({"m" + std::to_string(i), FreeLoopbackPort(), FreeLoopbackPort(), -1});
      initial += (i ? "," : "") + members_[i].name + "=" + PeerUrl(i);
    }
    initial_cluster_ = initial;
    for (int i = 0; i < members; ++i) Start(i, "new");
    for (int i = 0; i < members; ++i)
      if (!WaitHealthy(i)) return;
  }
  ~EtcdTestCluster() {
    for (size_t i = 0; i < members_.size(); ++i) Kill(static_cast<int>(i));
  }
  EtcdTestCluster(const EtcdTestCluster&) = delete;
  EtcdTestCluster& operator=(const EtcdTestCluster&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::string Endpoint(int i) const {
    return "127.0.0.1:" + std::to_string(members_[i].client_port);
  }
  std::vector<std::string> Endpoints() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < members_.size(); ++i) out.push_back(Endpoint(static_cast<int>(i)));
    return out;
  }
  // "127.0.0.1:p1,127.0.0.1:p2,..." (berthd --store etcd://...)
  std::string EndpointList() const {
    std::string out;
    for (const std::string& e : Endpoints()) out += (out.empty() ? "" : ",") + e;
    return out;
  }
  pid_t pid(int i) const { return members_[i].pid; }

  // SIGKILL and reap.
  void Kill(int i) {
    if (members_[i].pid <= 0) return;
    ::kill(members_[i].pid, SIGKILL);
    waitpid(members_[i].pid, nullptr, 0);
    members_[i].pid = -1;
  }
  // Starts a killed member again on its data directory; false (see error())
  // when it is not healthy within the bound.
  bool Restart(int i) {
    Start(i, "existing");
    return WaitHealthy(i);
  }
  // The member etcd's raft elected leader, as the running members see it
  // (-1 when none answers or none leads).
  int Leader() const {
    nlohmann::json leader;
    for (size_t i = 0; i < members_.size() && leader.is_null(); ++i)
      leader = MemberStatus(static_cast<int>(i)).value("leader", nlohmann::json());
    for (size_t j = 0; j < members_.size() && !leader.is_null(); ++j) {
      const nlohmann::json header =
          MemberStatus(static_cast<int>(j)).value("header", nlohmann::json::object());
      if (header.value("member_id", nlohmann::json()) == leader) return static_cast<int>(j);
    }
    return -1;
  }

  // Until `i` answers /health with "true" (it has a leader), 30 s at most.
  bool WaitHealthy(int i) {
    httplib::Client http(ClientUrl(i), tls_ ? tls_->cert_file : "", tls_ ? tls_->key_file : "");
    if (tls_) http.set_ca_cert_path(tls_->ca_file);
    http.set_connection_timeout(0, 200000);
    http.set_read_timeout(2, 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      httplib::Result res = http.Get("/health");
      if (res && res->status == 200 && res->body.find("\"true\"") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a poll with a bound
    }
    error_ = "etcd member " + members_[i].name +
             " was not healthy within 30 s (log: " + dir_.path() + "/" + members_[i].name + ".log)";
    return false;
  }

 private:
  // Member `i`'s answer to etcd's Maintenance.Status ({} when it gives
  // none): "leader" and "header.member_id" are raft ids.
  nlohmann::json MemberStatus(int i) const {
    if (members_[i].pid <= 0) return nlohmann::json::object();
    httplib::Client http(ClientUrl(i), tls_ ? tls_->cert_file : "", tls_ ? tls_->key_file : "");
    if (tls_) http.set_ca_cert_path(tls_->ca_file);
    http.set_read_timeout(2, 0);
    httplib::Result res = http.Post("/v3/maintenance/status", "{}", "application/json");
    nlohmann::json status = res && res->status == 200
                                ? nlohmann::json::parse(res->body, nullptr, false)
                                : nlohmann::json::object();
    return status.is_object() ? status : nlohmann::json::object();
  }

  struct Member {
    std::string name;
    int client_port, peer_port;
    pid_t pid;
  };
  std::string Scheme() const { return tls_ ? "https://" : "http://"; }
  std::string PeerUrl(int i) const {
    return Scheme() + "127.0.0.1:" + std::to_string(members_[i].peer_port);
  }
  std::string ClientUrl(int i) const {
    return Scheme() + "127.0.0.1:" + std::to_string(members_[i].client_port);
  }

  void Start(int i, const std::string& state) {
    const Member& m = members_[i];
    const std::string client = ClientUrl(i);
    std::vector<std::string> argv = {binary_,
                                     "--name=" + m.name,
                                     "--data-dir=" + dir_.path() + "/" + m.name,
                                     "--listen-client-urls=" + client,
                                     "--advertise-client-urls=" + client,
                                     "--listen-peer-urls=" + PeerUrl(i),
                                     "--initial-advertise-peer-urls=" + PeerUrl(i),
                                     "--initial-cluster=" + initial_cluster_,
                                     "--initial-cluster-state=" + state,
                                     "--initial-cluster-token=berth-test",
                                     "--heartbeat-interval=100",
                                     "--election-timeout=1000",
                                     "--pre-vote",
                                     "--logger=zap",
                                     "--log-level=error"};
    if (tls_)
      for (const char* side : {"", "peer-"})
        argv.insert(argv.end(), {std::string("--") + side + "cert-file=" + tls_->cert_file,
                                 std::string("--") + side + "key-file=" + tls_->key_file,
                                 std::string("--") + side + "trusted-ca-file=" + tls_->ca_file,
                                 std::string("--") + side + "client-cert-auth"});
    argv.insert(argv.end(), flags_.begin(), flags_.end());
    const std::string log = dir_.path() + "/" + m.name + ".log";
    const pid_t pid = fork();
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    members_[i].pid = pid;
  }

  std::vector<std::string> flags_;
  std::optional<EtcdTestTls> tls_;
  std::string binary_, initial_cluster_, error_;
  TestDir dir_;
  std::vector<Member> members_;
};

}  // namespace berth::store
