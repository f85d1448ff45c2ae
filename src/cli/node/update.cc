// `berth node update ID [--state S] [--availability A] [--label K=V ...]
// [--label-add K=V ...] [--label-rm K ...]`: PATCH /v1/nodes/ID; with
// --label-add or --label-rm it first reads the node's labels to edit them.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/flags.h"
#include "cli/node/node.h"

namespace berth::cli {
namespace {

struct NodeUpdateOptions {
  std::string id, state, availability;
  std::vector<std::string> labels, label_add, label_rm;
};

// The node's labels edited by --label-add and --label-rm: `base` (the
// --label set, else the node's own) less the removed, plus the added.
Result<Json> EditedLabels(const NodeUpdateOptions& o, Json base, const Json& added) {
  for (const std::string& key : o.label_rm)
    if (base.erase(key) == 0)
      return Status::NotFound("--label-rm '" + key + "': node " + o.id + " has no such label");
  base.update(added);
  return base;
}

// The PATCH body of the flags that need no request, and the labels
// --label-add adds; InvalidArgument: bad usage.
Result<Json> NodePatch(const NodeUpdateOptions& o, Json* added) {
  Json body = Json::object();
  if (!o.state.empty()) body["state"] = o.state;
  if (!o.availability.empty()) body["availability"] = o.availability;
  Result<Json> labels = ParseLabels(o.labels), adding = ParseLabels(o.label_add);
  for (const Result<Json>* parsed : {&labels, &adding})
    if (!parsed->ok()) return parsed->status();
  if (!labels->empty()) body["labels"] = *labels;
  *added = *adding;
  return body;
}

int RunNodeUpdate(const NodeUpdateOptions& o, const VerbContext& context) {
  Json added;
  Result<Json> body = NodePatch(o, &added);
  if (!body.ok()) {
    context.err << "berth: " << body.status().message() << "\n";
    return 2;
  }
  const std::string path = "/v1/nodes/" + o.id;
  if (!o.label_add.empty() || !o.label_rm.empty()) {
    std::optional<Json> node = CallOrSay(context.client, "GET", path, nullptr, context.err);
    if (!node) return 1;
    Result<Json> edited =
        EditedLabels(o, body->value("labels", node->value("labels", Json::object())), added);
    if (!edited.ok()) {
      context.err << "berth: " << edited.status().message() << "\n";
      return 1;
    }
    (*body)["labels"] = *edited;
  }
  if (body->empty()) {
    context.err << "berth: nothing to update: give --state, --availability or a label flag\n";
    return 2;
  }
  std::optional<Json> answer = CallOrSay(context.client, "PATCH", path, *body, context.err);
  if (!answer) return 1;
  if (context.json)
    context.out << answer->dump(2) << "\n";
  else
    PrintNodes(*answer, context.out);
  return 0;
}

}  // namespace

void AddNodeUpdate(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<NodeUpdateOptions>();
  CLI::App* verb =
      verbs.Add(noun, "update", "Change a node's state, availability or labels",
                [o](const VerbContext& context) { return RunNodeUpdate(*o, context); });
  AddIdArgument(*verb, "ID", "node id", o->id);
  verb->add_option("--state", o->state, "ready | down | disconnected | unknown");
  verb->add_option("--availability", o->availability, "active | pause | drain");
  verb->add_option("--label", o->labels,
                   "replace the labels with these KEY=VALUE pairs (repeatable)");
  verb->add_option("--label-add", o->label_add, "add or change a label KEY=VALUE (repeatable)");
  verb->add_option("--label-rm", o->label_rm, "remove a label KEY (repeatable)");
}

}  // namespace berth::cli
