// `berth service rebalance ID`: POST /v1/services/ID/rebalance (berthd
// moves the tasks on nodes holding more than the engine would place there
// now, as a start-first rolling update), then wait (service/wait.h).
#include <CLI/CLI.hpp>
#include <memory>

#include "cli/service/service.h"
#include "cli/service/wait.h"

namespace berth::cli {
namespace {

struct RebalanceOptions {
  std::string id;
  WaitFlags wait;
};

}  // namespace

void AddServiceRebalance(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<RebalanceOptions>();
  CLI::App* verb = verbs.Add(
      noun, "rebalance",
      "Move tasks towards the spread the engine would choose now, as a rolling update, and wait",
      [o](const VerbContext& context) {
        return PostAndWait(context, o->id, "rebalance", o->wait);
      });
  AddIdArgument(*verb, "ID", "service id", o->id);
  o->wait.Add(*verb);
}

}  // namespace berth::cli
