// The verbs of `berth node` (docs/cli.md, "berth node"): node.cc adds the
// simple ones from its table and update.cc the one of two requests.
#pragma once

#include <iosfwd>

#include "cli/verb.h"

namespace berth::cli {

void AddNodeUpdate(CLI::App& noun, Verbs& verbs);  // update.cc

// The node table of `node ls` (and of the answers of add, update, drain):
// ID, HOSTNAME, STATE, AVAILABILITY, CPU, MEMORY, LABELS and MESSAGE, with
// CPUs and memory in one spelling (output.h). `answer` is {"nodes": [...]}
// or one node.
void PrintNodes(const Json& answer, std::ostream& out);

}  // namespace berth::cli
