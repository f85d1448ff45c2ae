// A commands file (`berth job submit --commands-file FILE`): one command
// line per task, split into words the way a POSIX shell splits them, but
// with nothing expanded and no shell run, so each task runs exactly the
// program and arguments its line names.
//
//   # comments and blank lines are skipped
//   make -C lib test
//   sh -c 'echo "two words" > out.txt'
//   grep "a \"quoted\" word" file\ with\ spaces
//
// Quoting: 'single quotes' keep everything up to the next '; "double
// quotes" keep everything but a backslash before " \ $ or ` (which
// escapes it); outside quotes a backslash keeps the next character. An
// unquoted # at the start of a word begins a comment. A line ends at \n
// (a \r before it is dropped); a backslash cannot continue a line.
// Pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace berth::cli {

// The words of one line (none for a blank or comment line), or
// InvalidArgument naming the problem ("unterminated single quote").
Result<std::vector<std::string>> SplitCommandLine(std::string_view line);

// The command lines of a file's `text`, in order, or InvalidArgument
// naming the line ("line 3: unterminated double quote") or saying the file
// has none.
Result<std::vector<std::vector<std::string>>> ParseCommandLines(std::string_view text);

}  // namespace berth::cli
