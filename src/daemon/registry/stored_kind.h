// StoredKind: one kind of store object as the API sees it, shared by the
// registries (nodes, services, jobs, tasks). An object's view is its JSON
// body plus "revision"; a missing one is NotFound "no <kind> '<id>'"; writes
// carry revision preconditions, so a concurrent change is a Conflict, never
// a lost write. Thread-safe (the store is).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

class StoredKind {
 public:
  StoredKind(store::Store& store, std::string kind) : store_(store), kind_(std::move(kind)) {}

  static api::Json View(const store::StoredObject& object);
  Result<store::StoredObject> Load(std::string_view id) const;
  Result<api::Json> Get(std::string_view id) const;
  // {"<list_name>": [views...]} ordered by id.
  Result<api::Json> List(const std::string& list_name) const;
  // Stores a new object, with `also` in the same commit; Conflict if the id
  // exists (or a precondition of `also` fails).
  Result<api::Json> Create(const std::string& id, const api::Json& body,
                           std::vector<store::Write> also = {});
  // Replaces `old` with `body` if nobody changed it since it was loaded.
  Result<api::Json> Replace(const store::StoredObject& old, const api::Json& body);
  // Removes the object, with `also` in the same commit.
  Status Remove(std::string_view id, std::vector<store::Write> also = {});
  // Removes `loaded` (as Load read it) if nobody changed it since, with
  // `also` in the same commit.
  Status Remove(const store::StoredObject& loaded, std::vector<store::Write> also = {});

 private:
  store::Store& store_;
  std::string kind_;
};

// Services and jobs name their tasks "<name>.<n>", so they share one
// namespace: creating either also creates this object, and a second service
// or job of the same name is a Conflict "service-or-job '<name>' already
// exists". Removing a service releases its name; jobs keep theirs.
store::Write ClaimWorkloadName(const std::string& id, const char* kind);
store::Write ReleaseWorkloadName(const std::string& id);

}  // namespace berth::daemon
