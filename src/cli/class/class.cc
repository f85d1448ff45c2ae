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

// A number of the last admission pass's, or "-" before the first.
std::string Count(const Json& of_class, const char* key) {
  return of_class.is_object() ? std::to_string(of_class.value(key, int64_t{0})) : "-";
}

// One row per class: its percent and, from the last admission pass, its
// entitlement, running and waiting tasks; then a line for each class whose
// percent rounds down to no worker, since such a class only borrows.
// `counted`: the answer is GET's, which has the counts once a pass ran.
void PrintClasses(const Json& answer, std::ostream& out, bool counted) {
  const Json admission = answer.value("admission", Json::object());
  const Json passed = admission.value("classes", Json::object());
  const int64_t workers = admission.value("workers", int64_t{0});
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
  const Json classes = answer.value("classes", Json::object());
  for (const auto& [name, percent] : classes.items()) {
    const Json of_class = passed.value(name, Json());
    rows.push_back({name, percent.dump(), Count(of_class, "entitlement"),
                    Count(of_class, "running"), Count(of_class, "waiting")});
    if (of_class.is_object() && of_class.value("entitlement", int64_t{0}) == 0 &&
        percent.is_number() && percent.get<int64_t>() > 0)
      notes.push_back("class '" + name + "' is entitled to 0 of " + std::to_string(workers) +
                      " workers (" + percent.dump() +
                      "% rounds down): it runs only on workers the other classes leave idle");
  }
  PrintTable(out, {"CLASS", "LOAD %", "ENTITLED", "RUNNING", "WAITING"}, rows);
  if (admission.contains("workers"))
    out << "workers: " << workers << " (" << admission.value("idle", int64_t{0}) << " idle)\n";
  else if (counted)
    out << "workers: no admission pass yet (counts appear once a job is submitted)\n";
  for (const std::string& note : notes) out << note << "\n";
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
  return {[o] { return ClassSetRequest(*o); },
          [](const Json& answer, std::ostream& out) { PrintClasses(answer, out, false); }};
}

}  // namespace

void AddClassCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun =
      *app.add_subcommand("class", "Fair-share classes of a running berthd")->require_subcommand(1);
  verbs.AddTable(noun, {{"get",
                         "Show the classes (percents, entitlements, running and waiting tasks), "
                         "requestor map and rebalance settings",
                         [](CLI::App&) {
                           return OneRequest{[] { return Result<Request>(Get("/v1/classes")); },
                                             [](const Json& answer, std::ostream& out) {
                                               PrintClasses(answer, out, true);
                                             }};
                         }},
                        {"set", "Change any of the parameters (the others stay)", DefineClassSet}});
  noun.get_subcommand("get")->alias("ls");  // as docker's and berth's other nouns list
}

}  // namespace berth::cli
