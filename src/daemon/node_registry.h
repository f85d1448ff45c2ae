// NodeRegistry: the node operations of the berthd API on the store:
// register, get, list, update (state, availability, labels), drain, remove.
//
// A node is stored as the JSON the API accepted (kind "node"), validated by
// api::DecodeNode, so every field and error text is the one of docs/plan.md.
// Updates are read-modify-write with a revision precondition: a concurrent
// change of the same node makes the second update a Conflict (409), never a
// lost write.
//
// Thread-safe (the store is).
#pragma once

#include <string_view>

#include "api/json_fields.h"
#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

class NodeRegistry {
 public:
  explicit NodeRegistry(store::Store& store) : store_(store) {}

  // Registers a new node; Conflict if its id exists. Returns the node view.
  Result<api::Json> Register(const api::Json& node);
  Result<api::Json> Get(std::string_view id) const;
  // {"nodes": [...]}, ordered by id.
  Result<api::Json> List() const;
  // Applies a patch of the fields state, availability and labels (labels
  // replace the node's labels).
  Result<api::Json> Update(std::string_view id, const api::Json& patch);
  // Availability "drain": no new tasks.
  Result<api::Json> Drain(std::string_view id);
  Status Remove(std::string_view id);

 private:
  Result<store::StoredObject> Load(std::string_view id) const;
  store::Store& store_;
};

}  // namespace berth::daemon
