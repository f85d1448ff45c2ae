#include "daemon/registry/stored_kind.h"

#include "core/names.h"

namespace berth::daemon {

constexpr const char* kWorkloadNames = "service-or-job";

store::Write ClaimWorkloadName(const std::string& id, const char* kind) {
  return store::Write::Create(kWorkloadNames, id, kind);
}

store::Write ReleaseWorkloadName(const std::string& id) {
  return store::Write::Delete(kWorkloadNames, id);
}

api::Json StoredKind::View(const store::StoredObject& object) {
  api::Json view = api::Json::parse(object.body);
  view["revision"] = object.revision;
  return view;
}

Result<store::StoredObject> StoredKind::Load(std::string_view id) const {
  Result<std::optional<store::StoredObject>> found = store_.Get(kind_, id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::NotFound("no " + kind_ + " " + Quoted(id));
  return std::move(**found);
}

Result<api::Json> StoredKind::Get(std::string_view id) const {
  Result<store::StoredObject> object = Load(id);
  if (!object.ok()) return object.status();
  return View(*object);
}

Result<api::Json> StoredKind::List(const std::string& list_name) const {
  Result<std::vector<store::StoredObject>> objects = store_.List(kind_);
  if (!objects.ok()) return objects.status();
  api::Json views = api::Json::array();
  for (const store::StoredObject& o : *objects) views.push_back(View(o));
  return api::Json{{list_name, std::move(views)}};
}

Result<api::Json> StoredKind::Create(const std::string& id, const api::Json& body,
                                     std::vector<store::Write> also) {
  also.insert(also.begin(), store::Write::Create(kind_, id, body.dump()));
  Result<int64_t> committed = store_.Commit(also);
  if (!committed.ok()) return committed.status();
  return View({kind_, id, body.dump(), *committed});
}

Result<api::Json> StoredKind::Replace(const store::StoredObject& old, const api::Json& body) {
  store::Write write = store::Write::Put(kind_, old.id, body.dump());
  write.IfRevision(old.revision);
  Result<int64_t> committed = store_.Commit({write});
  if (!committed.ok()) return committed.status();
  return View({kind_, old.id, body.dump(), *committed});
}

Status StoredKind::Remove(std::string_view id, std::vector<store::Write> also) {
  Result<store::StoredObject> object = Load(id);
  if (!object.ok()) return object.status();
  return Remove(*object, std::move(also));
}

Status StoredKind::Remove(const store::StoredObject& loaded, std::vector<store::Write> also) {
  store::Write write = store::Write::Delete(kind_, loaded.id);
  write.IfRevision(loaded.revision);
  also.insert(also.begin(), std::move(write));
  Result<int64_t> committed = store_.Commit(also);
  return committed.ok() ? Status::Ok() : committed.status();
}

}  // namespace berth::daemon
