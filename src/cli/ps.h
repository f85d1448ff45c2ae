// The `ps` verbs of `service` and `node` (docs/cli.md): one request, GET
// /v1/tasks?service=ID or ?node=ID with the --filter values, printed as a
// task table with each slot's history under its newest task (task_table.h).
#pragma once

#include "cli/verb.h"

namespace berth::cli {

// Adds the positional `argument` (an id), --no-trunc and -f/--filter to
// `verb`; the request lists the tasks whose `key` (service or node) is
// that id. A filter other than desired-state=STATE or node=NODE is bad
// usage.
OneRequest DefineTaskPs(CLI::App& verb, const char* key, const char* argument,
                        const char* filter_help);

}  // namespace berth::cli
