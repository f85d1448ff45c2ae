// `berth service scale SERVICE=N ...`: PATCH each service's replicas, then
// wait for them all at once (service/wait.h) without progress lines, so
// the output stays one line per service unless something goes wrong.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/service/service.h"
#include "cli/service/wait.h"
#include "core/names.h"

namespace berth::cli {
namespace {

struct ScaleOptions {
  std::vector<std::string> items;  // SERVICE=N
  WaitFlags wait;
};

// "SERVICE=N" -> (service, n).
Result<std::pair<std::string, int64_t>> ParseScale(const std::string& text) {
  const size_t eq = text.find('=');
  char* rest = nullptr;
  const long n = eq == std::string::npos ? -1 : std::strtol(text.c_str() + eq + 1, &rest, 10);
  if (eq == std::string::npos || eq == 0 || n < 0 || *rest != '\0')
    return Status::InvalidArgument("expected SERVICE=REPLICAS, e.g. web=5, got " + Quoted(text));
  if (Status valid = CheckId(text.substr(0, eq)); !valid.ok())
    return Status::InvalidArgument("SERVICE: " + valid.message());
  return std::make_pair(text.substr(0, eq), static_cast<int64_t>(n));
}

// Every item is checked before the first request, so a typo changes nothing.
int RunScale(const ScaleOptions& o, const VerbContext& context) {
  std::vector<std::pair<std::string, int64_t>> targets;
  for (const std::string& item : o.items) {
    Result<std::pair<std::string, int64_t>> scale = ParseScale(item);
    if (!scale.ok()) {
      context.err << "berth: " << scale.status().message() << "\n";
      return 2;
    }
    targets.push_back(*scale);
  }
  std::vector<ServiceChange> changes;
  for (const auto& [id, n] : targets) {
    std::optional<Json> scaled = CallOrSay(context.client, "PATCH", "/v1/services/" + id,
                                           Json{{"replicas", n}}, context.err);
    if (!scaled) return 1;
    context.out << id << " scaled to " << n << "\n";
    changes.push_back({id, scaled->value("revision", int64_t{0})});
  }
  return WaitForServices(context.client, changes, o.wait, false, context.out, context.err);
}

}  // namespace

void AddServiceScale(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<ScaleOptions>();
  CLI::App* verb = verbs.Add(
      noun, "scale",
      "Set replicated services' replica counts (SERVICE=N ...) and wait for them to keep running",
      [o](const VerbContext& context) { return RunScale(*o, context); });
  verb->add_option("SERVICE=N", o->items, "services and replica counts")->required();
  o->wait.Add(*verb);
}

}  // namespace berth::cli
