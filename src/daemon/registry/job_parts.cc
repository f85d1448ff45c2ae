#include "daemon/registry/job_parts.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <random>
#include <unordered_set>

#include "daemon/loop/simulated_run.h"

namespace berth::daemon {
namespace {

using api::Json;

constexpr int kIndexDigits = 10;

std::string PartId(std::string_view job, std::string_view submission, int64_t first) {
  char index[kIndexDigits + 1];
  std::snprintf(index, sizeof index, "%0*lld", kIndexDigits, static_cast<long long>(first));
  return PartsPrefix(job, submission) + index;
}

// A decimal number without sign or leading zero (the task indexes in ids);
// 0 if `digits` is not one.
int64_t IndexFrom(std::string_view digits) {
  int64_t n = 0;
  if (digits.starts_with('0')) return 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return error == std::errc() && end == digits.data() + digits.size() ? n : 0;
}

// The first index of part `id` (its last path element, zero-padded); 0 if
// it has none.
int64_t FirstIndexOf(std::string_view id) {
  std::string_view digits = id.substr(id.rfind('/') + 1);
  digits.remove_prefix(std::min(digits.find_first_not_of('0'), digits.size()));
  return IndexFrom(digits);
}

// The part's text, written directly: one dump per task, not a JSON tree.
std::string PartBody(const std::vector<std::string>& tasks,
                     const std::vector<std::string>& commands) {
  auto join = [](std::string& out, const std::vector<std::string>& items) {
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i != 0) out += ',';
      out += items[i];
    }
    out += ']';
  };
  std::string body = "{\"tasks\":";
  join(body, tasks);
  if (!commands.empty()) {
    body += ",\"commands\":";
    join(body, commands);
  }
  body += '}';
  return body;
}

// Fields of a stored job, read without throwing on a corrupt body.
int64_t TasksOf(const Json& job) {
  const auto it = job.find("tasks");
  return it != job.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}
bool KilledOf(const Json& job) {
  const auto it = job.find("killed");
  return it != job.end() && it->is_boolean() && it->get<bool>();
}

// Appends job `id`'s tasks without a record (none in `recorded`) to `out`.
Status AddUnrecorded(const store::Store& store, const store::StoredObject& job_object,
                     const std::unordered_set<std::string_view>& recorded,
                     std::vector<store::StoredObject>* out) {
  const Json job = Json::parse(job_object.body, nullptr, false);
  const std::string* submission = SubmissionOf(job);
  if (submission == nullptr) return Status::Ok();  // every task has a record
  Result<std::vector<store::StoredObject>> parts =
      store.ListPrefix(kJobTasksKind, PartsPrefix(job_object.id, *submission));
  if (!parts.ok()) return parts.status();
  const int64_t tasks = TasksOf(job);
  return ForEachPartTask(*parts, [&](int64_t index, const Json& entry, const Json*) {
    if (index > tasks) return;
    std::string id = job_object.id + "." + std::to_string(index);
    if (recorded.contains(id)) return;
    out->push_back({"task", std::move(id),
                    UnrecordedTaskBody(job_object.id, job, index, entry).dump(),
                    job_object.revision});
  });
}

}  // namespace

const std::string* SubmissionOf(const Json& job) {
  const auto it = job.is_object() ? job.find("submission") : job.end();
  return it != job.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

std::string NewSubmission() {
  std::random_device device;  // /dev/urandom on Linux
  const uint64_t value = (uint64_t{device()} << 32) | device();
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string PartsPrefix(std::string_view job, std::string_view submission) {
  std::string prefix;
  prefix.reserve(job.size() + submission.size() + 2);
  prefix.append(job).append("/").append(submission).append("/");
  return prefix;
}

std::vector<store::Write> EncodeParts(std::string_view job, std::string_view submission,
                                      const Json& tasks, const Json* commands) {
  std::vector<store::Write> parts;
  std::vector<std::string> entries, lines;
  size_t bytes = 0;
  int64_t first = 1;  // the index of entries[0]
  auto flush = [&] {
    parts.push_back(
        store::Write::Put(kJobTasksKind, PartId(job, submission, first), PartBody(entries, lines)));
    first += static_cast<int64_t>(entries.size());
    entries.clear();
    lines.clear();
    bytes = 0;
  };
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!entries.empty() && bytes >= kPartBytes) flush();
    entries.push_back(tasks[i].dump());
    bytes += entries.back().size() + 1;
    if (commands != nullptr) {
      lines.push_back((*commands)[i].dump());
      bytes += lines.back().size() + 1;
    }
  }
  if (!entries.empty()) flush();
  return parts;
}

Status ForEachPartTask(const std::vector<store::StoredObject>& parts, const PartTask& each) {
  for (const store::StoredObject& part : parts) {
    const Json body = Json::parse(part.body, nullptr, false);
    const int64_t first = FirstIndexOf(part.id);
    const Json* tasks = body.is_object() && body.contains("tasks") ? &body["tasks"] : nullptr;
    const Json* commands =
        body.is_object() && body.contains("commands") ? &body["commands"] : nullptr;
    if (first < 1 || tasks == nullptr || !tasks->is_array() ||
        (commands != nullptr && (!commands->is_array() || commands->size() != tasks->size())))
      return Status::Internal("the stored job tasks '" + part.id + "' do not decode");
    for (size_t i = 0; i < tasks->size(); ++i)
      each(first + static_cast<int64_t>(i), (*tasks)[i],
           commands != nullptr ? &(*commands)[i] : nullptr);
  }
  return Status::Ok();
}

Json UnrecordedTaskBody(const std::string& job_id, const Json& job, int64_t index,
                        const Json& entry) {
  const bool killed = KilledOf(job);
  std::string name = job_id + "." + std::to_string(index);
  if (const auto it = entry.find("name"); it != entry.end() && it->is_string()) name = *it;
  Result<Json> run = ReadSimulatedRun(entry, "");  // checked when the job was submitted
  const auto submitted = job.find("submitted_at");
  return {{"job", job_id},
          {"name", std::move(name)},
          {"state", killed ? "shutdown" : "new"},
          {"desired_state", killed ? "shutdown" : "running"},
          {"run", run.ok() ? *run : Json::object()},
          {"created_at", submitted != job.end() ? *submitted : Json("")},
          {"updated_at", submitted != job.end() ? *submitted : Json("")},
          {"message", killed ? "job was killed" : "waiting for admission"}};
}

Result<Json> ReadCommands(const store::Store& store, std::string_view job_id,
                          std::string_view submission) {
  Result<std::vector<store::StoredObject>> parts =
      store.ListPrefix(kJobTasksKind, PartsPrefix(job_id, submission));
  if (!parts.ok()) return parts.status();
  Json commands = Json::array();
  BERTH_RETURN_IF_ERROR(ForEachPartTask(*parts, [&](int64_t, const Json&, const Json* command) {
    commands.push_back(command != nullptr ? *command : Json::array());
  }));
  return commands;
}

Result<std::vector<store::StoredObject>> ListTaskRecords(const store::Store& store,
                                                         std::string_view owner) {
  Result<std::vector<store::StoredObject>> tasks =
      owner.empty() ? store.List("task") : store.ListPrefix("task", std::string(owner) + ".");
  if (!tasks.ok()) return tasks;
  std::vector<store::StoredObject> jobs;
  if (owner.empty()) {
    Result<std::vector<store::StoredObject>> all = store.List("job");
    if (!all.ok()) return all.status();
    jobs = std::move(*all);
  } else {
    Result<std::optional<store::StoredObject>> job = store.Get("job", owner);
    if (!job.ok()) return job.status();
    if (job->has_value()) jobs.push_back(std::move(**job));
  }
  std::unordered_set<std::string_view> recorded;
  for (const store::StoredObject& t : *tasks) recorded.insert(t.id);
  std::vector<store::StoredObject> unrecorded;
  for (const store::StoredObject& job : jobs)
    BERTH_RETURN_IF_ERROR(AddUnrecorded(store, job, recorded, &unrecorded));
  if (unrecorded.empty()) return tasks;
  const size_t stored = tasks->size();
  std::move(unrecorded.begin(), unrecorded.end(), std::back_inserter(*tasks));
  std::sort(tasks->begin() + static_cast<std::ptrdiff_t>(stored), tasks->end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  std::inplace_merge(tasks->begin(), tasks->begin() + static_cast<std::ptrdiff_t>(stored),
                     tasks->end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return tasks;
}

Result<std::optional<store::StoredObject>> GetTaskRecord(const store::Store& store,
                                                         std::string_view id) {
  Result<std::optional<store::StoredObject>> found = store.Get("task", id);
  if (!found.ok() || found->has_value()) return found;
  const size_t dot = id.rfind('.');
  if (dot == std::string_view::npos) return found;
  const std::string_view job_id = id.substr(0, dot);
  const int64_t index = IndexFrom(id.substr(dot + 1));  // "j.05" is no task's id
  if (index < 1) return found;
  Result<std::optional<store::StoredObject>> job_object = store.Get("job", job_id);
  if (!job_object.ok()) return job_object.status();
  if (!job_object->has_value()) return found;
  const Json job = Json::parse((*job_object)->body, nullptr, false);
  const std::string* submission = SubmissionOf(job);
  if (submission == nullptr || index > TasksOf(job)) return found;
  Result<std::vector<store::StoredObject>> parts =
      store.ListPrefix(kJobTasksKind, PartsPrefix(job_id, *submission));
  if (!parts.ok()) return parts.status();
  // Only the part that holds it: the last one starting at or before it.
  auto part = std::find_if(parts->rbegin(), parts->rend(),
                           [&](const auto& p) { return FirstIndexOf(p.id) <= index; });
  if (part == parts->rend()) return found;
  std::optional<store::StoredObject> task;
  BERTH_RETURN_IF_ERROR(ForEachPartTask({*part}, [&](int64_t n, const Json& entry, const Json*) {
    if (n == index)
      task = store::StoredObject{"task", std::string(id),
                                 UnrecordedTaskBody(std::string(job_id), job, n, entry).dump(),
                                 (*job_object)->revision};
  }));
  return task;
}

}  // namespace berth::daemon
