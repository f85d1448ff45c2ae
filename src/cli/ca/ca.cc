// `berth ca show|rotate`: the cluster's certificate authority
// (docs/security.md), as `docker swarm ca` shows and rotates it; each one
// request.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/output.h"

namespace berth::cli {
namespace {

void PrintCa(const Json& answer, std::ostream& out) {
  out << "Digest:     " << Text(answer["digest"]) << "\n"
      << "Expires:    " << Text(answer["not_after"]) << "\n"
      << "Rotating:   "
      << (answer.value("rotating", false)
              ? "yes: the old and the new root are both trusted (berth ca rotate --finish)"
              : "no")
      << "\n"
      << Text(answer["cert"]);
}

SimpleVerb Show() {
  return {"show", "Print the CA's digest, expiry and certificate (PEM)", [](CLI::App&) {
            return OneRequest{[] { return Result<Request>(Get("/v1/ca")); }, PrintCa};
          }};
}

SimpleVerb Rotate() {
  return {
      "rotate",
      "Make a new root CA, trusted beside the old one; nodes move to it at their next "
      "heartbeat. --finish drops the old root (and rotates the node join token)",
      [](CLI::App& verb) {
        auto finish = std::make_shared<bool>(false);
        verb.add_flag("--finish", *finish,
                      "drop the old root once every node holds a certificate of the new one");
        return OneRequest{
            [finish] {
              return Result<Request>(Request{
                  "POST", std::string("/v1/ca/rotate") + (*finish ? "?finish=true" : ""), nullptr});
            },
            PrintCa};
      }};
}

}  // namespace

void AddCaCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun = *app.add_subcommand("ca", "Show or rotate the cluster's certificate authority")
                        ->require_subcommand(1);
  verbs.AddTable(noun, {Show(), Rotate()});
}

}  // namespace berth::cli
