// A History as JSON lines, so a soak run can dump what its clients saw and
// a later run of the checker can judge it again.
//
// One event per line, in history order:
//   {"type": "write", "client", "time_ms", "kind", "id", "acknowledged", "error"?}
//   {"type": "read" | "final", "client", "time_ms", "revision",
//    "tasks": [{"id", "service"?, "slot"?, "node"?, "state", "reserves"?}],
//    "nodes": [{"id", "capacity"}], "services": [ids], "jobs": [ids]}
// where a resources object is {"milli_cpu", "memory_bytes"}. Task fields at
// their default (no service, slot 0, no node, no reservations) are left out:
// a soak run writes thousands of snapshots of thousands of tasks.
//
// A recorder may append lines as events happen (ToJsonLine), so that a run
// that dies still leaves its history behind. Pure functions; the streams
// are the caller's.
#pragma once

#include <istream>
#include <ostream>
#include <string>

#include "core/status.h"
#include "history/history.h"

namespace berth::history {

// One line of JSON, without its newline.
std::string ToJsonLine(const Write& write);
std::string ToJsonLine(const Snapshot& read, bool final = false);

// Every event of `history`, a line each: the writes, the reads, then the
// final state (the checker does not need their interleaving).
void WriteJsonLines(const History& history, std::ostream& out);

// The history of a stream of such lines (blank lines skipped).
// InvalidArgument "line N: ...": a line that is not such an event, or a
// second final state.
Result<History> ReadJsonLines(std::istream& in);

}  // namespace berth::history
