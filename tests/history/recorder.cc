#include "history/recorder.h"

#include "api/api_client.h"
#include "history/api_snapshot.h"

namespace berth::history {

Result<Snapshot> ReadCluster(api::ApiClient& api, const std::string& client, int64_t time_ms) {
  ApiAnswers answers;
  for (auto [path, answer] : {std::pair{"/v1/tasks", &answers.tasks},
                              {"/v1/services", &answers.services},
                              {"/v1/jobs", &answers.jobs},
                              {"/v1/nodes", &answers.nodes}}) {
    Result<api::Json> got = api.Call("GET", path);
    if (!got.ok()) return got.status().WithContext(std::string("GET ") + path);
    *answer = std::move(*got);
  }
  Result<api::Json> health = api.Call("GET", "/v1/health");
  if (!health.ok()) return health.status().WithContext("GET /v1/health");
  answers.revision = health->value("revision", int64_t{-1});
  if (answers.revision < 0)
    return Status::InvalidArgument("GET /v1/health: no revision in " + health->dump());
  return SnapshotFromApi(answers, client, time_ms);
}

Write Create(api::ApiClient& api, const std::string& client, ObjectKind kind,
             const nlohmann::json& body, int64_t time_ms) {
  const std::string path = "/v1/" + std::string(ToString(kind)) + "s";
  Result<api::Json> answer = api.Call("POST", path, body);
  return Write{client,      time_ms,
               kind,        body.value("id", ""),
               answer.ok(), answer.ok() ? "" : answer.status().message()};
}

}  // namespace berth::history
