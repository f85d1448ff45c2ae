// Process-wide settings every Berth program that speaks gRPC makes before
// its first channel or server.
#pragma once

#include <string>

namespace berth::session {

// Debian's absl checks every lock gRPC takes for deadlock cycles (10% of
// berthd's CPU with 5,000 sessions, and 5% of a joining node's,
// docs/benchmarks.md "Node sessions"); gRPC's own builds turn that off.
// Idempotent and thread-safe.
void UseGrpcDefaults();

// Why a TCP socket cannot be bound to host:port now ("Address already in
// use"), or "" when it can: gRPC says only that its server did not start.
std::string BindProblem(const std::string& host, int port);

}  // namespace berth::session
