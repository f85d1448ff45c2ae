// The nouns of `berth` that talk to a running berthd (docs/cli.md), as
// docker's cmd.go lists them. Each noun's file adds its verbs: simple ones
// (one request, one printed answer) from a table in the noun's file, the
// others from a file of their own (service/create.cc, node/update.cc, ...).
#pragma once

#include "cli/verb.h"

namespace berth::cli {

// Adds node, service, task, job, class and token under `app`.
void AddClientCommands(CLI::App& app, Verbs& verbs);

void AddNodeCommands(CLI::App& app, Verbs& verbs);     // node/node.cc
void AddServiceCommands(CLI::App& app, Verbs& verbs);  // service/service.cc
void AddTaskCommands(CLI::App& app, Verbs& verbs);     // task/task.cc
void AddJobCommands(CLI::App& app, Verbs& verbs);      // job/job.cc
void AddClassCommands(CLI::App& app, Verbs& verbs);    // class/class.cc
void AddTokenCommands(CLI::App& app, Verbs& verbs);    // token/token.cc
void AddCaCommands(CLI::App& app, Verbs& verbs);       // ca/ca.cc

}  // namespace berth::cli
