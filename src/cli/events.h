// `berth events` (docs/cli.md, "berth events"): the cluster's events from
// GET /v1/events, printed as `docker events` prints its own.
#pragma once

#include "cli/verb.h"

namespace berth::cli {

void AddEventsCommand(CLI::App& app, Verbs& verbs);

}  // namespace berth::cli
