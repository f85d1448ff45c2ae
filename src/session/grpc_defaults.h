// What every Berth program that speaks gRPC sets up the same way: process
// settings made before its first channel or server, a server's channel
// arguments, and its addresses and errors.
#pragma once

#include <string>

#include "core/status.h"
#include "core/time.h"

namespace grpc {
class ServerBuilder;
}

namespace berth::session {

// Debian's absl checks every lock gRPC takes for deadlock cycles (10% of
// berthd's CPU with 5,000 sessions, and 5% of a joining node's,
// docs/benchmarks.md "Node sessions"); gRPC's own builds turn that off.
// gRPC's log lines are written as the program's ("berthd: grpc: ...")
// instead of in gRPC's raw format. Idempotent and thread-safe.
void UseGrpcDefaults();

// "host:port", an IPv6 host in brackets: a server's listening address or a
// channel's target.
std::string HostPort(const std::string& host, int port);

// What every Berth gRPC server sets (and UseGrpcDefaults): a connection
// that has not finished its TLS handshake within `handshake_timeout` is
// closed (gRPC's own 120 s let a flood of half-open connections hold the
// process's file descriptors), and a port in use is refused (gRPC binds
// with SO_REUSEPORT, so a second berthd on the same port started and
// silently shared the nodes' connections).
void SetServerDefaults(grpc::ServerBuilder& builder, Duration handshake_timeout);

// Unavailable "cannot listen for `what` on host:port", with why the port
// cannot be bound ("address already in use"): gRPC says only that its
// server did not start.
Status CannotListen(const std::string& what, const std::string& host, int port);

}  // namespace berth::session
