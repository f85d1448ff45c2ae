// `berth service rollback ID`: POST /v1/services/ID/rollback (a new spec
// version with the template the last update replaced, rolled out with the
// rollback config), then wait (service/wait.h).
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/service/service.h"
#include "cli/service/wait.h"

namespace berth::cli {
namespace {

struct RollbackOptions {
  std::string id;
  WaitFlags wait;
};

}  // namespace

void AddServiceRollback(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<RollbackOptions>();
  CLI::App* verb = verbs.Add(
      noun, "rollback", "Return a service to its previous template and wait for it",
      [o](const VerbContext& context) { return PostAndWait(context, o->id, "rollback", o->wait); });
  AddIdArgument(*verb, "ID", "service id", o->id);
  o->wait.Add(*verb);
}

}  // namespace berth::cli
