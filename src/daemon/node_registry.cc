#include "daemon/node_registry.h"

#include "api/cluster_codec.h"

namespace berth::daemon {
namespace {

constexpr const char* kKind = "node";

// What the API returns for a stored node: its fields plus the revision.
api::Json View(const store::StoredObject& object) {
  api::Json node = api::Json::parse(object.body);
  node["revision"] = object.revision;
  return node;
}

// A node of a placement document, plus "slots": the workers it offers to
// fair-share admission (a positive integer, default 1).
Status Validate(const api::Json& node) {
  if (!node.is_object()) return api::TypeError(node, "", "a node object");
  api::Json placement = node;
  if (auto slots = placement.find("slots"); slots != placement.end()) {
    int64_t value = 0;
    BERTH_RETURN_IF_ERROR(api::ReadInteger(*slots, "slots", &value));
    if (value < 1 || value > 1'000'000) return api::FieldError("slots", "expected 1 to 1000000");
    placement.erase("slots");
  }
  Node decoded;
  return api::DecodeNode(placement, "", &decoded);
}

}  // namespace

Result<store::StoredObject> NodeRegistry::Load(std::string_view id) const {
  Result<std::optional<store::StoredObject>> found = store_.Get(kKind, id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::NotFound("no node '" + std::string(id) + "'");
  return std::move(**found);
}

Result<api::Json> NodeRegistry::Register(const api::Json& node) {
  BERTH_RETURN_IF_ERROR(Validate(node));
  const std::string id = node["id"].get<std::string>();
  Result<int64_t> committed = store_.Commit({store::Write::Create(kKind, id, node.dump())});
  if (!committed.ok()) return committed.status();
  return View({kKind, id, node.dump(), *committed});
}

Result<api::Json> NodeRegistry::Get(std::string_view id) const {
  Result<store::StoredObject> object = Load(id);
  if (!object.ok()) return object.status();
  return View(*object);
}

Result<api::Json> NodeRegistry::List() const {
  Result<std::vector<store::StoredObject>> objects = store_.List(kKind);
  if (!objects.ok()) return objects.status();
  api::Json nodes = api::Json::array();
  for (const store::StoredObject& o : *objects) nodes.push_back(View(o));
  return api::Json{{"nodes", std::move(nodes)}};
}

Result<api::Json> NodeRegistry::Update(std::string_view id, const api::Json& patch) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(patch, "", {"state", "availability", "labels", "slots"}));
  Result<store::StoredObject> object = Load(id);
  if (!object.ok()) return object.status();
  api::Json node = api::Json::parse(object->body);
  for (const auto& [field, value] : patch.items()) node[field] = value;
  BERTH_RETURN_IF_ERROR(Validate(node));
  store::Write write = store::Write::Put(kKind, object->id, node.dump());
  write.IfRevision(object->revision);
  Result<int64_t> committed = store_.Commit({write});
  if (!committed.ok()) return committed.status();
  return View({kKind, object->id, node.dump(), *committed});
}

Result<api::Json> NodeRegistry::Drain(std::string_view id) {
  return Update(id, api::Json{{"availability", "drain"}});
}

Status NodeRegistry::Remove(std::string_view id) {
  Result<store::StoredObject> object = Load(id);
  if (!object.ok()) return object.status();
  store::Write write = store::Write::Delete(kKind, object->id);
  write.IfRevision(object->revision);
  Result<int64_t> committed = store_.Commit({write});
  return committed.ok() ? Status::Ok() : committed.status();
}

}  // namespace berth::daemon
