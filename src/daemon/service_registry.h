// ServiceRegistry: the service operations of the berthd API on the store:
// create, get, list, update (scale, or a new task template), remove.
//
// A service is stored (kind "service") as the service object of a placement
// document (docs/plan.md): id, spec_version, mode, replicas, task. It is
// validated by the same decoder `berth plan` uses, so fields and error texts
// are the same. Creating sets spec_version 1; an update that changes the
// task template increments it (the control loop then replaces the tasks of
// older versions); changing only `replicas` keeps it. The control loop, not
// this class, creates and stops tasks.
//
// Thread-safe (the store is).
#pragma once

#include <string_view>

#include "api/json_fields.h"
#include "core/status.h"
#include "daemon/stored_kind.h"

namespace berth::daemon {

class ServiceRegistry {
 public:
  explicit ServiceRegistry(store::Store& store) : services_(store, "service") {}

  // Body: id, mode (replicated | global), replicas (replicated only), task,
  // and run: {"duration": seconds, "outcome": "complete" | "fail"}, how the
  // simulated executor runs each task (absent: until stopped).
  Result<api::Json> Create(const api::Json& service);
  Result<api::Json> Get(std::string_view id) const;
  Result<api::Json> List() const;  // {"services": [...]} by id
  // Body: replicas and/or task.
  Result<api::Json> Update(std::string_view id, const api::Json& patch);
  Status Remove(std::string_view id);

 private:
  StoredKind services_;
};

}  // namespace berth::daemon
