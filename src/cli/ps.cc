#include "cli/ps.h"

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/task_table.h"

namespace berth::cli {
namespace {

struct PsOptions {
  std::string id;
  bool no_trunc = false;
  std::vector<std::string> filters;
};

// The query of the filters given ("&node=n1&desired_state=running").
Result<std::string> FilterQuery(const std::vector<std::string>& filters) {
  std::string query;
  for (const std::string& filter : filters) {
    const size_t eq = filter.find('=');
    const std::string key = filter.substr(0, eq == std::string::npos ? 0 : eq);
    if (key != "desired-state" && key != "node")
      return Status::InvalidArgument("--filter '" + filter +
                                     "': expected desired-state=STATE or node=NODE");
    query += (key == "node" ? "&node=" : "&desired_state=") + filter.substr(eq + 1);
  }
  return query;
}

}  // namespace

OneRequest DefineTaskPs(CLI::App& verb, const char* key, const char* argument,
                        const char* filter_help) {
  auto o = std::make_shared<PsOptions>();
  verb.add_option(argument, o->id, std::string(key) + " id")->check(IdRule())->required();
  verb.add_flag("--no-trunc", o->no_trunc, "do not cut messages");
  verb.add_option("-f,--filter", o->filters, filter_help);
  const std::string path = "/v1/tasks?" + std::string(key) + "=";
  return OneRequest{[o, path]() -> Result<Request> {
                      Result<std::string> query = FilterQuery(o->filters);
                      if (!query.ok()) return query.status();
                      return Get(path + o->id + *query);
                    },
                    [o](const Json& tasks, std::ostream& out) {
                      PrintTaskTable(tasks, {true, o->no_trunc}, out);
                    }};
}

}  // namespace berth::cli
