// The `berth` command line: argument parsing and dispatch to one command.
//
// RunBerth takes the arguments (without the program name) and the three
// standard streams, so tests drive it exactly as a user would. Exit statuses:
// 0 success, 2 bad usage or bad input (a message on `err`). Each command is
// documented in docs/cli.md and in its --help text.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "core/time.h"

namespace berth::cli {

int RunBerth(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
             std::ostream& err, const Clock& clock);

}  // namespace berth::cli
