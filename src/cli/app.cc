#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

#include "cli/client_commands.h"
#include "cli/plan_command.h"
#include "cli/up_command.h"
#include "core/names.h"

namespace berth::cli {
namespace {

constexpr const char* kPlanDescription =
    "Dry run: read a cluster snapshot and the work to place (JSON or YAML, FILE '-' for "
    "standard input), and print where each pending task would go, or why it cannot run. "
    "Changes nothing. The document format is in docs/plan.md.";

// Arguments become JSON text and URL paths, which must be UTF-8.
Status CheckArguments(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i)
    if (const size_t bad = FindInvalidUtf8(args[i]); bad != std::string::npos)
      return Status::InvalidArgument("argument " + std::to_string(i + 1) + " " + Quoted(args[i]) +
                                     " is not valid UTF-8 (at byte " + std::to_string(bad) + ")");
  return Status::Ok();
}

int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Clock& clock);

}  // namespace

// Every command reports its errors as values; a library exception escaping
// one is a bug, reported as such rather than as an abort.
int RunBerth(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
             std::ostream& err, const Clock& clock) {
  if (Status valid = CheckArguments(args); !valid.ok()) {
    err << "berth: " << valid.message() << "\n";
    return 2;
  }
  try {
    return Run(args, in, out, err, clock);
  } catch (const std::exception& e) {
    err << "berth: internal error: " << e.what() << "\n";
    return 1;
  }
}

namespace {

int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Clock& clock) {
  CLI::App app{"Berth: a cluster task scheduler.", "berth"};
  app.set_version_flag("--version", std::string("berth ") + BERTH_VERSION);
  app.set_help_all_flag("--help-all", "Print help for every command and exit");
  app.require_subcommand(1);

  PlanOptions plan;
  std::optional<uint64_t> seed;
  CLI::App* plan_command = app.add_subcommand("plan", kPlanDescription);
  plan_command->add_option("FILE", plan.file, "the plan document; '-' reads standard input")
      ->required();
  plan_command->add_option("--seed", seed,
                           "break ties between equal nodes with a shuffle seeded by N "
                           "(default: the smaller node id wins)");
  std::string strategy = "spread";
  plan_command
      ->add_option("--placement-strategy", strategy,
                   "how nodes are ordered when a task's preferences do not end with a "
                   "node.id preference: spread (SwarmKit's) or binpack (least room left first)")
      ->check(CLI::IsMember({"spread", "binpack"}))
      ->capture_default_str();
  plan_command->add_flag("--compact", plan.compact, "print the output on one line");

  UpOptions up;
  CLI::App* up_command = app.add_subcommand(
      "up",
      "Start a local Berth in this process: berthd with simulated nodes on the embedded store");
  up_command->add_option("--data-dir", up.daemon.data_dir, "data directory (store and API token)")
      ->capture_default_str();
  up_command->add_option("--host", up.daemon.host, "address to listen on")->capture_default_str();
  up_command->add_option("--port", up.daemon.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  up_command->add_option("--nodes", up.nodes, "simulated nodes to register")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  up_command->add_flag("--demo", up.demo, "create a demo service and show where its tasks went");
  up_command->add_flag("--once", up.once, "stop after printing the placements");
  up_command->add_flag("--local-node", up.local_node,
                       "also run a real node, 'local', whose tasks are processes of this machine "
                       "(with --demo: a task that echoes, and its output)");
  up_command->add_flag("--new-token", up.daemon.new_token,
                       "issue a new API token if the token file is missing although the data "
                       "directory holds data");

  ClientCommands client(app);

  // CLI11 parses a reversed vector and consumes it.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion&) {
    out << "berth " << BERTH_VERSION << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // A bare `berth` prints the overview; anything else names the problem.
    if (args.empty()) {
      err << app.help();
      return 2;
    }
    err << "berth: " << e.what() << "\nRun 'berth --help' for usage.\n";
    return 2;
  }
  if (plan_command->parsed()) {
    plan.seed = seed;
    plan.strategy = *placement::ParsePlacementStrategy(strategy);
    return RunPlan(plan, in, out, err, clock);
  }
  if (up_command->parsed()) return RunUp(up, out, err);
  if (client.selected()) return client.Run(out, err);
  return 2;  // unreachable: one subcommand is required
}

}  // namespace
}  // namespace berth::cli
