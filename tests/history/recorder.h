// The recorder's HTTP half: how a failover test's clients talk to a berthd
// through Berth's own ApiClient and turn what they sent and saw into
// history events (history.h). The translation of the answers is
// api_snapshot.h's.
//
// Each call uses the caller's ApiClient, which is one per thread
// (api/api_client.h); the events returned are plain values for the caller
// to add to its History.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "history/history.h"

namespace berth::api {
class ApiClient;
}

namespace berth::history {

// One read: GET /v1/tasks, then /v1/services and /v1/jobs (the owners of
// the tasks' reservations, read after them: api_snapshot.h), /v1/nodes,
// and last /v1/health for the revision, since lists carry none: the
// revision recorded is at least the one the lists were served at. Fails
// with the first call that fails (a read during a failover may; record
// nothing then) or with SnapshotFromApi's error.
Result<Snapshot> ReadCluster(api::ApiClient& api, const std::string& client, int64_t time_ms);

// Sends the create of `body` (POST /v1/nodes, /v1/services or /v1/jobs by
// `kind`) and records it: acknowledged when the answer was 2xx, else the
// error. The id is body["id"].
Write Create(api::ApiClient& api, const std::string& client, ObjectKind kind,
             const nlohmann::json& body, int64_t time_ms);

}  // namespace berth::history
