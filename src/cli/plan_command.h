// `berth plan`: the dry run of docs/plan.md. Reads a document (JSON or
// YAML), runs the same engine code the daemon runs, and prints the decisions
// as JSON. Changes nothing. A placement document (nodes, services, tasks)
// runs one pass of the full-view placement engine; an admission document
// (workers, classes, jobs) runs one fair-share iteration.
//
// PlanDocument is the pure core (text in, output text or an error out), used
// by the command and by tests; RunPlan adds reading the file and the exit
// status contract: 0 with the plan on `out`, or 2 with a message on `err` and
// nothing on `out`. Safe to call from any thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"
#include "placement/scheduler.h"

namespace berth::cli {

struct PlanOptions {
  // The document's path; "-" reads standard input.
  std::string file;
  // Absent: ties between equal nodes go to the smaller node id. Set: ties are
  // broken by a shuffle seeded with this value (placement documents only).
  std::optional<uint64_t> seed;
  // How leaves order their nodes when a task's preferences do not say
  // (placement documents only).
  placement::PlacementStrategy strategy = placement::PlacementStrategy::kSpread;
  // Print the output on one line instead of one line per list entry.
  bool compact = false;
};

// The plan output for a document, as JSON text ending in a newline. `now` is
// used when the document gives no "now". Errors are InvalidArgument naming
// the field.
Result<std::string> PlanDocument(std::string_view text, const PlanOptions& options, Timestamp now);

// Reads options.file (or `in` for "-"), plans it, and prints the outcome.
// Returns the process exit status: 0, or 2 for an unreadable or invalid document.
int RunPlan(const PlanOptions& options, std::istream& in, std::ostream& out, std::ostream& err,
            const Clock& clock);

}  // namespace berth::cli
