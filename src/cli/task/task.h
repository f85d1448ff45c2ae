// The verbs of `berth task` (docs/cli.md, "berth task"): task.cc adds the
// simple ones from its table and logs.cc the one of several requests.
#pragma once

#include "cli/verb.h"

namespace berth::cli {

void AddTaskLogs(CLI::App& noun, Verbs& verbs);  // logs.cc

// Adds the required positional TASK (an id or a name: web.1 is slot 1's
// newest task) to `verb`.
void AddTaskArgument(CLI::App& verb, std::string& task);

}  // namespace berth::cli
