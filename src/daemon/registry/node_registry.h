// NodeRegistry: the node operations of the berthd API on the store:
// register, get, list, update (state, availability, labels), drain, remove.
//
// A node is stored as the JSON the API accepted (kind "node"): a node of
// docs/plan.md, validated by api::DecodeNode so the fields and error texts
// are the same, plus "slots", the workers it offers to fair-share admission
// (default 1).
// Updates are read-modify-write with a revision precondition: a concurrent
// change of the same node makes the second update a Conflict (409), never a
// lost write.
//
// Thread-safe (the store is).
#pragma once

#include <string_view>

#include "api/json_fields.h"
#include "core/node.h"
#include "core/status.h"
#include "daemon/registry/stored_kind.h"

namespace berth::daemon {

// A stored node's body decoded for the engines: "slots" (admission's
// workers) and "berth_node" are berthd's, but for the berth-node's word on
// whether it enforces limits and pids limits (the limits filter; a node
// stored before berth-node said so is taken as not enforcing them).
Status DecodeStoredNode(api::Json body, const std::string& id, Node* node);

class NodeRegistry {
 public:
  explicit NodeRegistry(store::Store& store) : nodes_(store, "node") {}

  // Registers a new node; Conflict if its id exists. Returns the node view.
  // "berth_node" is refused: only a joining berth-node sets it.
  Result<api::Json> Register(const api::Json& node);
  // Checks a node body: api::DecodeNode's fields, plus "slots" and
  // "berth_node" (NodeDispatcher's record of a berth-node machine).
  static Status Validate(const api::Json& node);
  Result<api::Json> Get(std::string_view id) const;
  // {"nodes": [...]}, ordered by id.
  Result<api::Json> List() const;
  // Applies a patch of the fields state, availability, labels (replacing
  // the node's labels) and slots.
  Result<api::Json> Update(std::string_view id, const api::Json& patch);
  // Availability "drain": no new tasks.
  Result<api::Json> Drain(std::string_view id);
  // Removes the node, with `also` in the same commit, whatever its state.
  Status Remove(std::string_view id, std::vector<store::Write> also = {});
  // The stored node, for a removal that must know what it removes.
  Result<store::StoredObject> Load(std::string_view id) const { return nodes_.Load(id); }
  // DELETE /v1/nodes/{id}: removes the node `loaded` (Load's; Conflict if it
  // changed since), with `also` in the same commit. As Docker's `node rm`, a
  // node whose state is ready is not down and is removed only with `force`:
  // Conflict otherwise, naming --force and ?force=true.
  Status Remove(const store::StoredObject& loaded, bool force, std::vector<store::Write> also = {});

 private:
  StoredKind nodes_;
};

}  // namespace berth::daemon
