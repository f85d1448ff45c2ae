// `berth service logs SERVICE [-f] [-n N] [-t]`: the output of every task
// of the service that ran on a berth-node, merged in time (cli/logs.h).
#include "cli/logs.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/service/service.h"

namespace berth::cli {
namespace {

struct ServiceLogsOptions {
  std::string id;
  LogsOptions logs;
};

}  // namespace

void AddServiceLogs(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<ServiceLogsOptions>();
  CLI::App* verb =
      verbs.Add(noun, "logs", "Show the output of every task of a service, merged in time",
                [o](const VerbContext& context) {
                  return PrintServiceLogs(context.client, o->id, o->logs, context.out, context.err);
                });
  AddIdArgument(*verb, "SERVICE", "service id", o->id);
  AddLogsFlags(*verb, o->logs);
}

}  // namespace berth::cli
