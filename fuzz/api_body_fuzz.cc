// libFuzzer target: every request-body decoder behind berthd's and
// berth-agent's routes, called as the routes call them: ParseJsonBody, then
// berthd's registries and a berth-node's registration (on a MemoryStore)
// and berth-agent's codec; the body is also read as a stored part of a
// job's tasks. Any input
// must give a value or an error Status, never a crash or a sanitizer report,
// and a refused write must leave the store as it was.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "api/agent_codec.h"
#include "api/http_server.h"
#include "daemon/nodes/node_dispatcher.h"
#include "daemon/nodes/node_executor.h"
#include "daemon/registry/class_registry.h"
#include "daemon/registry/job_parts.h"
#include "daemon/registry/job_registry.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "store/memory_store.h"

namespace {

using berth::api::Json;

// Runs one write; a refusal that changed the store is a bug.
void Write(berth::store::MemoryStore& store, const std::function<berth::Status()>& write) {
  const int64_t before = store.revision();
  if (!write().ok() && store.revision() != before) __builtin_trap();
}

template <typename T>
berth::Status StatusOf(const berth::Result<T>& result) {
  return result.ok() ? berth::Status::Ok() : result.status();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  berth::Result<Json> parsed = berth::api::ParseJsonBody(text);
  if (!parsed.ok()) return 0;
  const Json& body = *parsed;

  berth::store::MemoryStore store;
  berth::ManualClock clock;
  berth::daemon::NodeRegistry nodes(store);
  berth::daemon::ServiceRegistry services(store);
  berth::daemon::JobRegistry jobs(store, clock);
  berth::daemon::ClassRegistry classes(store);
  // Something for the PATCH routes to change.
  if (!nodes.Register(Json{{"id", "n1"}}).ok() ||
      !services.Create(Json{{"id", "s1"}, {"replicas", 1}}).ok())
    __builtin_trap();
  Write(store, [&] { return StatusOf(nodes.Register(body)); });
  Write(store, [&] { return StatusOf(nodes.Update("n1", body)); });
  Write(store, [&] { return StatusOf(services.Create(body)); });
  Write(store, [&] { return StatusOf(services.Update("s1", body)); });
  Write(store, [&] { return StatusOf(jobs.Submit(body)); });
  // A stored job is read back whole: its tasks from its parts.
  if (body.is_object() && body.contains("id") && body["id"].is_string())
    (void)jobs.Get(body["id"].get<std::string>());
  (void)berth::daemon::ListTaskRecords(store, "");
  Write(store, [&] { return StatusOf(classes.Update(body)); });
  // POST /v1/node/register, with the join token as berth-node sends it.
  berth::daemon::NodeExecutor node_executor([] {});
  berth::daemon::NodeDispatcher dispatcher(store, nodes, node_executor, clock, [] {});
  const berth::Result<std::string> join = dispatcher.JoinToken();
  const std::optional<berth::api::Principal> joiner =
      join.ok() ? dispatcher.Authenticate(*join) : std::nullopt;
  if (!joiner) __builtin_trap();
  Write(store, [&] { return StatusOf(dispatcher.Register(body, *joiner)); });

  // The body as a stored part of a job's tasks (daemon/registry/job_parts.h).
  const Json job = {{"tasks", 3}, {"submitted_at", "2026-01-01T00:00:00Z"}};
  (void)berth::daemon::ForEachPartTask({{berth::daemon::kJobTasksKind, "j/s/0000000001", text, 1}},
                                       [&](int64_t index, const Json& entry, const Json*) {
                                         (void)berth::daemon::UnrecordedTaskBody("j", job, index,
                                                                                 entry);
                                       });

  // berth-agent's request bodies, and the answers berthd decodes.
  (void)berth::api::DecodeSampleRequest(body);
  (void)berth::api::DecodeCommitRequest(body);
  (void)berth::api::DecodeIdList(body, "tasks");
  (void)berth::api::DecodeEligibleRequest(body);
  (void)berth::api::DecodeSampleResponse(body, "agent");
  (void)berth::api::DecodeCommitResponse(body);
  (void)berth::api::DecodeRunsBatch(body);
  return 0;
}
