// The verbs of `berth service` (docs/cli.md, "berth service"), each in its
// own file under service/; service.cc adds them under the noun. Each adds
// its verb, with its own options, under `noun`.
#pragma once

#include "cli/verb.h"

namespace berth::cli {

void AddServiceCreate(CLI::App& noun, Verbs& verbs);     // create.cc
void AddServiceUpdate(CLI::App& noun, Verbs& verbs);     // update.cc
void AddServiceRollback(CLI::App& noun, Verbs& verbs);   // rollback.cc
void AddServiceRebalance(CLI::App& noun, Verbs& verbs);  // rebalance.cc
void AddServiceScale(CLI::App& noun, Verbs& verbs);      // scale.cc
void AddServiceLs(CLI::App& noun, Verbs& verbs);         // ls.cc
void AddServiceInspect(CLI::App& noun, Verbs& verbs);    // inspect.cc
void AddServiceLogs(CLI::App& noun, Verbs& verbs);       // logs.cc
void AddServiceRm(CLI::App& noun, Verbs& verbs);         // rm.cc

// `service inspect`'s table form: the service field by field, with its
// template, policies and update_status (inspect.cc).
void PrintServiceDetail(const Json& service, std::ostream& out);

}  // namespace berth::cli
