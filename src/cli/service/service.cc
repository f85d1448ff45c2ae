// `berth service`: its verbs, each in its own file but `ps`, a simple verb.
#include "cli/service/service.h"

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/ps.h"

namespace berth::cli {

void AddServiceCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun =
      *app.add_subcommand("service", "Manage services of a running berthd")->require_subcommand(1);
  AddServiceCreate(noun, verbs);
  AddServiceUpdate(noun, verbs);
  AddServiceRollback(noun, verbs);
  AddServiceRebalance(noun, verbs);
  AddServiceLogs(noun, verbs);
  AddServiceLs(noun, verbs);
  AddServiceInspect(noun, verbs);
  verbs.AddTable(noun, {{"ps", "List a service's tasks, each slot's history under its newest task",
                         [](CLI::App& verb) {
                           return DefineTaskPs(
                               verb, "service", "SERVICE",
                               "desired-state=running|shutdown|complete, node=NODE");
                         }}});
  AddServiceScale(noun, verbs);
  AddServiceRm(noun, verbs);
}

}  // namespace berth::cli
