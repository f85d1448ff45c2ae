// `berth token show|rotate node`: the node join token, as `docker swarm
// join-token worker` shows it; each one request.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/output.h"

namespace berth::cli {
namespace {

void PrintToken(const Json& answer, std::ostream& out) { out << Text(answer["token"]) << "\n"; }

// A simple verb of the token KIND (only "node" for now): METHOD
// /v1/tokens/KIND plus `suffix`.
SimpleVerb OnToken(const char* name, const char* help, const char* method, const char* suffix) {
  return {name, help, [=](CLI::App& verb) {
            auto kind = std::make_shared<std::string>();
            verb.add_option("KIND", *kind, "node")->check(CLI::IsMember({"node"}))->required();
            return OneRequest{
                [=] {
                  return Result<Request>(Request{method, "/v1/tokens/" + *kind + suffix, nullptr});
                },
                PrintToken};
          }};
}

}  // namespace

void AddTokenCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun =
      *app.add_subcommand("token", "Show or rotate the token berth-node machines join with")
           ->require_subcommand(1);
  verbs.AddTable(
      noun,
      {OnToken("show", "Print the node join token (berth-node --token-file)", "GET", ""),
       OnToken("rotate",
               "Replace the node join token (nodes that joined keep working; new ones need the "
               "new token)",
               "POST", "/rotate")});
}

}  // namespace berth::cli
