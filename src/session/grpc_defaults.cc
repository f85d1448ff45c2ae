#include "session/grpc_defaults.h"

#include <absl/synchronization/mutex.h>
#include <errno.h>
#include <grpc/support/log.h>
#include <grpcpp/server_builder.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace berth::session {

namespace {

// Why a TCP socket cannot be bound to host:port now, or "" when it can.
std::string BindProblem(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); e != 0)
    return gai_strerror(e);
  std::string problem;
  const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  const int on = 1;
  if (fd < 0) {
    problem = std::strerror(errno);
  } else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
             bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    problem = std::strerror(errno);
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (!problem.empty()) problem[0] = static_cast<char>(std::tolower(problem[0]));  // as httplib's
  return problem;
}

// gRPC's own lines ("E1207 12:00:00.123 77 ssl_transport_security.cc:1501]
// Handshake failed ...") in the program's voice, as its other lines:
// "berthd: grpc: Handshake failed ...". One write, so lines from several
// threads do not interleave. Which severities reach it is still gRPC's
// GRPC_VERBOSITY (errors by default).
void LogAsTheProgram(gpr_log_func_args* args) {
  const std::string line =
      std::string(program_invocation_short_name) + ": grpc: " + args->message + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

void UseGrpcDefaults() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  gpr_set_log_function(LogAsTheProgram);
}

std::string HostPort(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void SetServerDefaults(grpc::ServerBuilder& builder, Duration handshake_timeout) {
  UseGrpcDefaults();
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(handshake_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

Status CannotListen(const std::string& what, const std::string& host, int port) {
  const std::string why = BindProblem(host, port);
  return Status::Unavailable("cannot listen for " + what + " on " + host + ":" +
                             std::to_string(port) + (why.empty() ? "" : ": " + why));
}

}  // namespace berth::session
