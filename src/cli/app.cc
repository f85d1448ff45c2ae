#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/commands.h"
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

// The command line's parser with every command, and what it parsed. One
// per parse: CLI11 keeps what it parsed in the app.
class Program {
 public:
  Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Parses `args`; nullopt when a command was chosen (Execute runs it),
  // else the exit status, having printed help, the version or the error.
  std::optional<int> Parse(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err);
  // Whether the chosen command takes the words after `--` as its own.
  bool TakesCommand() const { return verbs_.takes_command(); }
  // Runs the chosen command; `command`: the words after `--`.
  int Execute(const std::vector<std::string>& command, std::istream& in, std::ostream& out,
              std::ostream& err, const Clock& clock);

 private:
  void AddPlan();
  void AddUp();

  CLI::App app_{"Berth: a cluster task scheduler.", "berth"};
  PlanOptions plan_;
  std::optional<uint64_t> seed_;
  std::string strategy_ = "spread";
  CLI::App* plan_command_ = nullptr;
  UpOptions up_;
  CLI::App* up_command_ = nullptr;
  Verbs verbs_;
};

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

// Everything after the first `--` belongs to the command that takes one
// (service create's task command), whatever its words look like: CLI11
// would read "-c" as an option, or hand the words to the last repeatable
// option before `--`. So the words before it are parsed alone; when they
// do not choose such a command, the whole line is parsed as it is (`berth
// plan -- FILE` keeps working).
int Run(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
        std::ostream& err, const Clock& clock) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  if (dashes != args.end()) {
    Program head;
    std::ostringstream ignored;
    if (!head.Parse({args.begin(), dashes}, ignored, ignored) && head.TakesCommand())
      return head.Execute({dashes + 1, args.end()}, in, out, err, clock);
  }
  Program whole;
  if (std::optional<int> done = whole.Parse(args, out, err)) return *done;
  return whole.Execute({}, in, out, err, clock);
}

Program::Program() {
  app_.set_version_flag("--version", std::string("berth ") + BERTH_VERSION);
  app_.set_help_all_flag("--help-all", "Print help for every command and exit");
  app_.require_subcommand(1);
  AddPlan();
  AddUp();
  AddClientCommands(app_, verbs_);
}

void Program::AddPlan() {
  plan_command_ = app_.add_subcommand("plan", kPlanDescription);
  plan_command_->add_option("FILE", plan_.file, "the plan document; '-' reads standard input")
      ->required();
  plan_command_->add_option("--seed", seed_,
                            "break ties between equal nodes with a shuffle seeded by N "
                            "(default: the smaller node id wins)");
  plan_command_
      ->add_option("--placement-strategy", strategy_,
                   "how nodes are ordered when a task's preferences do not end with a "
                   "node.id preference: spread (SwarmKit's) or binpack (least room left first)")
      ->check(CLI::IsMember({"spread", "binpack"}))
      ->capture_default_str();
  plan_command_->add_flag("--compact", plan_.compact, "print the output on one line");
}

void Program::AddUp() {
  up_command_ = app_.add_subcommand(
      "up",
      "Start a local Berth in this process: berthd with simulated nodes on the embedded store");
  up_command_->add_option("--data-dir", up_.daemon.data_dir, "data directory (store and API token)")
      ->capture_default_str();
  up_command_->add_option("--host", up_.daemon.host, "address to listen on")->capture_default_str();
  up_command_->add_option("--port", up_.daemon.port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  up_command_->add_option("--nodes", up_.nodes, "simulated nodes to register")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  up_command_->add_flag("--demo", up_.demo, "create a demo service and show where its tasks went");
  up_command_->add_flag("--once", up_.once, "stop after printing the placements");
  up_command_->add_flag("--local-node", up_.local_node,
                        "also run a real node, 'local', whose tasks are processes of this machine "
                        "(with --demo: a task that echoes, and its output)");
  up_command_->add_flag("--new-token", up_.daemon.new_token,
                        "issue a new API token if the token file is missing although the data "
                        "directory holds data");
}

std::optional<int> Program::Parse(const std::vector<std::string>& args, std::ostream& out,
                                  std::ostream& err) {
  // CLI11 parses a reversed vector and consumes it.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app_.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app_.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    out << app_.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion&) {
    out << "berth " << BERTH_VERSION << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // A bare `berth` prints the overview; anything else names the problem.
    if (args.empty()) {
      err << app_.help();
      return 2;
    }
    err << "berth: " << e.what() << "\nRun 'berth --help' for usage.\n";
    return 2;
  }
  return std::nullopt;
}

int Program::Execute(const std::vector<std::string>& command, std::istream& in, std::ostream& out,
                     std::ostream& err, const Clock& clock) {
  if (plan_command_->parsed()) {
    plan_.seed = seed_;
    plan_.strategy = *placement::ParsePlacementStrategy(strategy_);
    return RunPlan(plan_, in, out, err, clock);
  }
  if (up_command_->parsed()) return RunUp(up_, out, err);
  if (verbs_.selected()) return verbs_.Run(command, in, out, err, clock);
  return 2;  // unreachable: one subcommand is required
}

}  // namespace
}  // namespace berth::cli
