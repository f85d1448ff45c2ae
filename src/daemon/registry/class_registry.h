// ClassRegistry: the fair-share class configuration of berthd
// (docs/admission.md, "Parameters"): class load percents, the
// requestor map, the rebalance threshold and minimum duration. Stored as one
// object (kind "config", id "classes") in the shape of an admission
// document's parts:
//   {"classes": {"land": 40, ...}, "requestors": [["^land", "land"], ...],
//    "rebalance": {"threshold": 50, "min_duration_s": 60}}
// Without a stored configuration every job is in one class, "default".
// A change is validated by fairshare::Config (the same rules and messages as
// `berth plan`) before it is stored; a bad one leaves the previous in force.
//
// Thread-safe (the store is).
#pragma once

#include "api/json_fields.h"
#include "core/status.h"
#include "fairshare/config.h"
#include "store/store.h"

namespace berth::daemon {

class ClassRegistry {
 public:
  // Where the configuration is stored.
  static constexpr const char* kKind = "config";
  static constexpr const char* kId = "classes";

  explicit ClassRegistry(store::Store& store) : store_(store) {}

  // The configuration, with "revision" (0 for the default).
  Result<api::Json> Get() const;
  // Replaces the parts present in `patch` (classes, requestors, rebalance).
  Result<api::Json> Update(const api::Json& patch);

  // The fairshare::Config of a stored configuration body (for the control loop).
  static Result<fairshare::Config> ToConfig(const api::Json& body);
  // The stored configuration object, or nullopt while the default holds.
  static Result<std::optional<store::StoredObject>> Stored(const store::Store& store);

 private:
  store::Store& store_;
};

}  // namespace berth::daemon
