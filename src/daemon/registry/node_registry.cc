#include "daemon/registry/node_registry.h"

#include "api/cluster_codec.h"

namespace berth::daemon {

// A node of a placement document, plus "slots": the workers it offers to
// fair-share admission (a positive integer, default 1).
Status NodeRegistry::Validate(const api::Json& node) {
  if (!node.is_object()) return api::TypeError(node, "", "a node object");
  api::Json placement = node;
  if (auto slots = placement.find("slots"); slots != placement.end()) {
    int64_t value = 0;
    BERTH_RETURN_IF_ERROR(api::ReadInteger(*slots, "slots", &value));
    if (value < 1 || value > 1'000'000) return api::FieldError("slots", "expected 1 to 1000000");
    placement.erase("slots");
  }
  if (auto berth_node = placement.find("berth_node"); berth_node != placement.end()) {
    if (!berth_node->is_object()) return api::TypeError(*berth_node, "berth_node", "an object");
    placement.erase("berth_node");
  }
  Node decoded;
  return api::DecodeNode(placement, "", &decoded);
}

Status DecodeStoredNode(api::Json body, const std::string& id, Node* node) {
  body.erase("slots");
  if (const api::Json b = body.value("berth_node", api::Json()); b.is_object()) {
    body["limits_enforced"] = b.value("limits_enforced", false);
    body["pids_limit_enforced"] = b.value("limits_pids", false);
  }
  body.erase("berth_node");
  return api::DecodeNode(body, "node '" + id + "'", node);
}

Result<api::Json> NodeRegistry::Register(const api::Json& node) {
  if (node.is_object() && node.contains("berth_node"))
    return api::FieldError("berth_node", "is set by berth-node when it joins, not through the API");
  BERTH_RETURN_IF_ERROR(Validate(node));
  return nodes_.Create(node["id"].get<std::string>(), node);
}

Result<api::Json> NodeRegistry::Get(std::string_view id) const { return nodes_.Get(id); }

Result<api::Json> NodeRegistry::List() const { return nodes_.List("nodes"); }

Result<api::Json> NodeRegistry::Update(std::string_view id, const api::Json& patch) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(patch, "", {"state", "availability", "labels", "slots"}));
  Result<store::StoredObject> object = nodes_.Load(id);
  if (!object.ok()) return object.status();
  api::Json node = api::Json::parse(object->body);
  for (const auto& [field, value] : patch.items()) node[field] = value;
  BERTH_RETURN_IF_ERROR(Validate(node));
  return nodes_.Replace(*object, node);
}

Result<api::Json> NodeRegistry::Drain(std::string_view id) {
  return Update(id, api::Json{{"availability", "drain"}});
}

Status NodeRegistry::Remove(std::string_view id, std::vector<store::Write> also) {
  return nodes_.Remove(id, std::move(also));
}

Status NodeRegistry::Remove(const store::StoredObject& loaded, bool force,
                            std::vector<store::Write> also) {
  const api::Json node = api::Json::parse(loaded.body, nullptr, false);
  // A node without a state is ready (api::DecodeNode); a damaged one goes.
  const bool ready = node.is_object() && node.value("state", api::Json("ready")) == "ready";
  if (ready && !force)
    return Status::Conflict("node '" + loaded.id +
                            "' is not down and can't be removed (its state is ready): stop it "
                            "first, or remove it anyway with --force (berth node rm --force " +
                            loaded.id + ", or DELETE /v1/nodes/" + loaded.id + "?force=true)");
  return nodes_.Remove(loaded, std::move(also));
}

}  // namespace berth::daemon
