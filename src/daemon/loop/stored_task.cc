#include "daemon/loop/stored_task.h"

#include <array>

#include "api/json_writer.h"

namespace berth::daemon {
namespace {

using api::Json;

std::string Text(const Json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<Timestamp> Time(const Json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_string()) return std::nullopt;
  Result<Timestamp> at = ParseRfc3339(it->get_ref<const std::string&>());
  return at.ok() ? std::optional<Timestamp>(*at) : std::nullopt;
}

TaskState State(const Json& body, const char* key, TaskState absent) {
  Result<TaskState> state = ParseTaskState(Text(body, key));
  return state.ok() ? *state : absent;
}

// A pass stamps its tasks with a few times (now: created, updated, started;
// when they were assigned): the last ones formatted are kept (per thread).
const std::string& FormattedTime(Timestamp at) {
  struct Formatted {
    Timestamp at;
    std::string text;
  };
  thread_local std::array<Formatted, 4> recent;
  thread_local size_t next = 0;
  for (const Formatted& f : recent)
    if (f.at == at && !f.text.empty()) return f.text;
  Formatted& f = recent[next++ % recent.size()];
  f = {at, FormatRfc3339(at)};
  return f.text;
}

// The times a task carries, among its other fields.
void WriteTime(api::ObjectWriter& w, const char* key, const std::optional<Timestamp>& at) {
  if (at) w.Text(key, FormattedTime(*at));
}

}  // namespace

StoredTask DecodeStoredTask(const Json& body, std::string_view id) {
  StoredTask t;
  t.id = id;
  t.service = Text(body, "service");
  t.job = Text(body, "job");
  t.name = Text(body, "name");
  t.node = Text(body, "node");
  t.agent = Text(body, "agent");
  t.message = Text(body, "message");
  t.state = State(body, "state", TaskState::kNew);
  t.desired = State(body, "desired_state", TaskState::kRunning);
  if (auto it = body.find("spec_version"); it != body.end() && it->is_number_unsigned())
    t.spec_version = it->get<uint64_t>();
  if (auto it = body.find("slot"); it != body.end() && it->is_number_unsigned())
    t.slot = it->get<uint64_t>();
  t.restart_at = Time(body, "restart_at");
  t.created_at = Time(body, "created_at");
  t.updated_at = Time(body, "updated_at");
  t.admitted_at = Time(body, "admitted_at");
  t.assigned_at = Time(body, "assigned_at");
  t.started_at = Time(body, "started_at");
  if (auto it = body.find("run"); it != body.end() && it->is_object()) {
    SimulatedRun run;
    if (auto ms = it->find("duration_ms"); ms != it->end() && ms->is_number_integer())
      run.duration_ms = ms->get<int64_t>();
    run.fail = it->value("outcome", "complete") == "fail";
    t.run = run;
  }
  for (auto [key, out] : {std::pair{"attempt", &t.attempt}, {"retries", &t.retries}})
    if (auto it = body.find(key); it != body.end() && it->is_number_integer())
      *out = it->get<int64_t>();
  return t;
}

std::string EncodeStoredTask(const StoredTask& t) {
  std::string out;
  out.reserve(256);
  {
    api::ObjectWriter w(out);
    WriteTime(w, "admitted_at", t.admitted_at);
    w.Text("agent", t.agent);
    WriteTime(w, "assigned_at", t.assigned_at);
    if (t.attempt != 0) w.Number("attempt", t.attempt);
    WriteTime(w, "created_at", t.created_at);
    if (t.desired != TaskState::kRunning) w.Text("desired_state", ToString(t.desired));
    w.Text("job", t.job);
    w.Text("message", t.message);
    w.Text("name", t.name);
    w.Text("node", t.node);
    WriteTime(w, "restart_at", t.restart_at);
    if (t.retries != 0) w.Number("retries", t.retries);
    if (t.run) {
      w.Key("run");
      api::ObjectWriter run(out);
      run.Number("duration_ms", t.run->duration_ms);
      run.Text("outcome", t.run->fail ? "fail" : "complete");
    }
    w.Text("service", t.service);
    if (t.slot != 0) w.Number("slot", static_cast<int64_t>(t.slot));
    if (t.spec_version) w.Number("spec_version", static_cast<int64_t>(*t.spec_version));
    WriteTime(w, "started_at", t.started_at);
    w.Text("state", ToString(t.state));
    WriteTime(w, "updated_at", t.updated_at);
  }
  return out;
}

}  // namespace berth::daemon
