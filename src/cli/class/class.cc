// `berth class`: get and set the fair-share class configuration, each one
// request.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/output.h"

namespace berth::cli {
namespace {

void PrintClasses(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json classes = answer.value("classes", Json::object());
  for (const auto& [name, percent] : classes.items()) rows.push_back({name, percent.dump()});
  PrintTable(out, {"CLASS", "LOAD %"}, rows);
  out << "requestors: " << answer.value("requestors", Json::array()).dump() << "\n"
      << "rebalance: " << answer.value("rebalance", Json::object()).dump() << "\n";
}

struct ClassSetOptions {
  std::vector<std::string> percents, requestors;
  std::string threshold, min_duration;
};

// The PATCH body: only the parameters given.
Result<Request> ClassSetRequest(const ClassSetOptions& o) {
  Json patch = Json::object();
  auto percents = ParsePairs(o.percents, "--percents");
  if (!percents.ok()) return percents.status();
  for (const auto& [name, value] : *percents) {
    char* rest = nullptr;
    const long n = std::strtol(value.c_str(), &rest, 10);
    if (*rest != '\0')
      return Status::InvalidArgument("--percents '" + name + "=" + value +
                                     "': expected an integer");
    patch["classes"][name] = n;
  }
  auto rules = ParsePairs(o.requestors, "--requestor");
  if (!rules.ok()) return rules.status();
  for (const auto& [pattern, name] : *rules)
    patch["requestors"].push_back(Json::array({pattern, name}));
  if (!o.threshold.empty() || !o.min_duration.empty()) {
    patch["rebalance"] = Json::object();
    if (!o.threshold.empty())
      patch["rebalance"]["threshold"] = std::strtol(o.threshold.c_str(), nullptr, 10);
    if (!o.min_duration.empty())
      patch["rebalance"]["min_duration_s"] = std::strtod(o.min_duration.c_str(), nullptr);
  }
  if (patch.empty())
    return Status::InvalidArgument("nothing to set: give --percents, --requestor or --rebalance-*");
  return Request{"PATCH", "/v1/classes", patch};
}

OneRequest DefineClassSet(CLI::App& verb) {
  auto o = std::make_shared<ClassSetOptions>();
  verb.add_option("--percents", o->percents,
                  "class load percents CLASS=N[,CLASS=N...] (replaces all classes)");
  verb.add_option("--requestor", o->requestors,
                  "PATTERN=CLASS, in match order (repeatable; replaces the map)");
  verb.add_option("--rebalance-threshold", o->threshold,
                  "spread (in points) that starts the rebalance timer; 0: off")
      ->check(CLI::Number);
  verb.add_option("--rebalance-min-duration", o->min_duration,
                  "seconds the spread must stay over the threshold; 0: off")
      ->check(CLI::Number);
  return {[o] { return ClassSetRequest(*o); }, PrintClasses};
}

}  // namespace

void AddClassCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun =
      *app.add_subcommand("class", "Fair-share classes of a running berthd")->require_subcommand(1);
  verbs.AddTable(
      noun, {{"get", "Show the class load percents, requestor map and rebalance settings",
              [](CLI::App&) {
                return OneRequest{[] { return Result<Request>(Get("/v1/classes")); }, PrintClasses};
              }},
             {"set", "Change any of the parameters (the others stay)", DefineClassSet}});
}

}  // namespace berth::cli
