#include "daemon/registry/class_registry.h"

#include "api/admission_codec.h"

namespace berth::daemon {
namespace {

api::Json DefaultBody() {
  return api::Json{{"classes", {{"default", 100}}},
                   {"requestors", api::Json::array()},
                   {"rebalance", {{"threshold", 0}, {"min_duration_s", 0}}}};
}

}  // namespace

Result<fairshare::Config> ClassRegistry::ToConfig(const api::Json& body) {
  api::Json doc = body;
  doc["workers"] = 0;
  Result<api::AdmissionDocument> decoded = api::DecodeAdmissionDocument(doc, Timestamp{});
  if (!decoded.ok()) return decoded.status();
  Result<fairshare::Admission> admission = api::MakeAdmission(*decoded);
  if (!admission.ok()) return admission.status();
  return admission->config();
}

Result<std::optional<store::StoredObject>> ClassRegistry::Stored(const store::Store& store) {
  return store.Get(kKind, kId);
}

Result<api::Json> ClassRegistry::Get() const {
  Result<std::optional<store::StoredObject>> stored = Stored(store_);
  if (!stored.ok()) return stored.status();
  api::Json body = stored->has_value() ? api::Json::parse((*stored)->body) : DefaultBody();
  body["revision"] = stored->has_value() ? (*stored)->revision : 0;
  // What the last admission pass found (loop/steps/admission.h): per class
  // its entitlement, running, waiting and starting tasks.
  Result<std::optional<store::StoredObject>> admission = store_.Get("admission", "status");
  if (!admission.ok()) return admission.status();
  if (admission->has_value()) {
    api::Json status = api::Json::parse((*admission)->body, nullptr, false);
    if (status.is_object()) body["admission"] = std::move(status);
  }
  return body;
}

Result<api::Json> ClassRegistry::Update(const api::Json& patch) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(patch, "", {"classes", "requestors", "rebalance"}));
  Result<std::optional<store::StoredObject>> stored = Stored(store_);
  if (!stored.ok()) return stored.status();
  api::Json body = stored->has_value() ? api::Json::parse((*stored)->body) : DefaultBody();
  for (const auto& [field, value] : patch.items()) body[field] = value;
  // Rules that name the default class stop making sense once it is replaced.
  if (patch.contains("classes") && !patch.contains("requestors") && body["requestors"].empty())
    body.erase("requestors");
  Result<fairshare::Config> config = ToConfig(body);
  if (!config.ok()) return config.status();
  store::Write write = store::Write::Put(kKind, kId, body.dump());
  write.IfRevision(stored->has_value() ? (*stored)->revision : 0);
  Result<int64_t> committed = store_.Commit({write});
  if (!committed.ok()) return committed.status();
  body["revision"] = *committed;
  return body;
}

}  // namespace berth::daemon
