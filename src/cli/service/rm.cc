// `berth service rm ID ...`: DELETE each service; one berthd refuses does
// not stop the others (exit 1 if any was refused).
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/service/service.h"

namespace berth::cli {
namespace {

struct RmOptions {
  std::vector<std::string> ids;
};

int RunServiceRm(const RmOptions& o, const VerbContext& context) {
  int status = 0;
  for (const std::string& id : o.ids) {
    if (CallOrSay(context.client, "DELETE", "/v1/services/" + id, nullptr, context.err))
      context.out << "removed " << id << "\n";
    else
      status = 1;
  }
  return status;
}

}  // namespace

void AddServiceRm(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<RmOptions>();
  verbs
      .Add(noun, "rm", "Remove services (their tasks stop)",
           [o](const VerbContext& context) { return RunServiceRm(*o, context); })
      ->add_option("ID", o->ids, "service ids")
      ->check(IdRule())
      ->required();
}

}  // namespace berth::cli
