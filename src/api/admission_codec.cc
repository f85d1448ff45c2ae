#include "api/admission_codec.h"

#include <re2/re2.h>

#include <set>

#include "api/json_fields.h"
#include "core/names.h"
#include "fairshare/task_choice.h"

namespace berth::api {
namespace {

using Doc = AdmissionDocument;
using fairshare::ClassShare;
using fairshare::RequestorRule;

// Counts beyond this are typos, and expanding them would exhaust memory.
constexpr uint64_t kMaxTasksPerJob = 100'000'000;

Status ReadClasses(const Json& value, const std::string& path, std::vector<ClassShare>* out) {
  if (!value.is_object()) return TypeError(value, path, "an object of class: percent");
  std::vector<ClassShare> classes;
  for (const auto& [name, percent] : value.items()) {
    if (Status valid = CheckId(name); !valid.ok())
      return FieldError(path, "class name: " + valid.message());
    classes.push_back({name, 0});
    BERTH_RETURN_IF_ERROR(ReadInteger(percent, FieldPath(path, name), &classes.back().percent));
  }
  *out = std::move(classes);
  return Status::Ok();
}

// A requestor pattern: a regular expression (RE2) of at most 4096 bytes.
Status ReadPattern(const Json& value, const std::string& path, std::string* out) {
  return ReadTextUpTo(value, path, kMaxLabelValueBytes, out);
}

// [["pattern", "class"], ...]
Status ReadRequestors(const Json& value, const std::string& path, std::vector<RequestorRule>* out) {
  BERTH_RETURN_IF_ERROR(CheckArray(value, path));
  std::vector<RequestorRule> entries;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string item = IndexPath(path, i);
    if (!value[i].is_array() || value[i].size() != 2)
      return FieldError(item, "expected a [pattern, class] pair, got " + Brief(value[i]));
    entries.emplace_back();
    BERTH_RETURN_IF_ERROR(ReadPattern(value[i][0], IndexPath(item, 0), &entries.back().pattern));
    BERTH_RETURN_IF_ERROR(ReadId(value[i][1], IndexPath(item, 1), &entries.back().class_name));
  }
  *out = std::move(entries);
  return Status::Ok();
}

Status ReadRebalance(const Json& value, const std::string& path, Doc* doc) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"threshold", "min_duration_s", "over_since_s"}));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "threshold", path, ReadInteger, &doc->rebalance_threshold));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "min_duration_s", path, ReadSeconds, &doc->rebalance_min_duration));
  Duration over_since{0};
  BERTH_RETURN_IF_ERROR(ReadField(value, "over_since_s", path, ReadSeconds, &over_since));
  if (value.contains("over_since_s")) doc->over_since = over_since;
  return Status::Ok();
}

Status ReadCount(const Json& value, const std::string& path, uint64_t* count) {
  BERTH_RETURN_IF_ERROR(ReadUnsigned(value, path, count));
  if (*count > kMaxTasksPerJob)
    return FieldError(path, "at most " + std::to_string(kMaxTasksPerJob) + " tasks per job");
  return Status::Ok();
}

// Task ids are unique within their job.
Status CheckUnique(const std::string& id, const std::string& path, std::set<std::string>* seen) {
  if (!seen->insert(id).second) return FieldError(path, "duplicate task id '" + id + "'");
  return Status::Ok();
}

Status ReadRunning(const Json& value, const std::string& path, Timestamp now,
                   std::set<std::string>* ids, std::vector<fairshare::RunningTask>* out) {
  if (value.is_number()) {
    uint64_t count = 0;
    BERTH_RETURN_IF_ERROR(ReadCount(value, path, &count));
    for (uint64_t i = 0; i < count; ++i)
      out->push_back({"r" + std::to_string(i), now - std::chrono::seconds(i)});
    return Status::Ok();
  }
  if (!value.is_array()) return TypeError(value, path, "a count or a list of running tasks");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string item = IndexPath(path, i);
    BERTH_RETURN_IF_ERROR(CheckObject(value[i], item, {"id", "started_at"}));
    fairshare::RunningTask task{"", now};
    BERTH_RETURN_IF_ERROR(RequireField(value[i], "id", item, ReadTaskId, &task.id));
    BERTH_RETURN_IF_ERROR(CheckUnique(task.id, FieldPath(item, "id"), ids));
    BERTH_RETURN_IF_ERROR(ReadField(value[i], "started_at", item, ReadTime, &task.started_at));
    out->push_back(std::move(task));
  }
  return Status::Ok();
}

Status ReadWaiting(const Json& value, const std::string& path, std::set<std::string>* ids,
                   std::vector<fairshare::WaitingTask>* out) {
  if (value.is_number()) {
    uint64_t count = 0;
    BERTH_RETURN_IF_ERROR(ReadCount(value, path, &count));
    out->reserve(count);
    for (uint64_t i = 0; i < count; ++i) out->push_back({"t" + std::to_string(i), std::nullopt});
    return Status::Ok();
  }
  if (!value.is_array()) return TypeError(value, path, "a count or a list of waiting tasks");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string item = IndexPath(path, i);
    BERTH_RETURN_IF_ERROR(CheckObject(value[i], item, {"id", "duration_s"}));
    fairshare::WaitingTask task;
    BERTH_RETURN_IF_ERROR(RequireField(value[i], "id", item, ReadTaskId, &task.id));
    BERTH_RETURN_IF_ERROR(CheckUnique(task.id, FieldPath(item, "id"), ids));
    Duration expected{0};
    BERTH_RETURN_IF_ERROR(ReadField(value[i], "duration_s", item, ReadSeconds, &expected));
    if (value[i].contains("duration_s")) task.expected_duration = expected;
    out->push_back(std::move(task));
  }
  return Status::Ok();
}

Status ReadJob(const Json& value, const std::string& path, Timestamp now, fairshare::Job* job) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"id", "requestor", "running", "waiting"}));
  BERTH_RETURN_IF_ERROR(RequireField(value, "id", path, ReadId, &job->id));
  BERTH_RETURN_IF_ERROR(ReadField(value, "requestor", path, ReadText, &job->requestor));
  std::set<std::string> ids;
  if (auto it = value.find("running"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadRunning(*it, FieldPath(path, "running"), now, &ids, &job->running));
  if (auto it = value.find("waiting"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadWaiting(*it, FieldPath(path, "waiting"), &ids, &job->waiting));
  fairshare::OrderWaitingTasks(job->waiting);  // the document lists them in job order
  return Status::Ok();
}

Status ReadJobs(const Json& value, const std::string& path, Timestamp now,
                std::vector<fairshare::Job>* out) {
  BERTH_RETURN_IF_ERROR(CheckArray(value, path));
  std::set<std::string> ids;
  out->resize(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string item = IndexPath(path, i);
    BERTH_RETURN_IF_ERROR(ReadJob(value[i], item, now, &(*out)[i]));
    if (!ids.insert((*out)[i].id).second)
      return FieldError(FieldPath(item, "id"), "duplicate job id '" + (*out)[i].id + "'");
  }
  return Status::Ok();
}

}  // namespace

bool IsAdmissionDocument(const nlohmann::json& doc) {
  if (!doc.is_object()) return false;
  for (const char* key : {"workers", "classes", "requestors", "rebalance", "jobs"})
    if (doc.contains(key)) return true;
  return false;
}

Result<AdmissionDocument> DecodeAdmissionDocument(const nlohmann::json& doc,
                                                  Timestamp default_now) {
  BERTH_RETURN_IF_ERROR(
      CheckObject(doc, "", {"now", "workers", "classes", "requestors", "rebalance", "jobs"}));
  Doc out;
  out.now = default_now;
  BERTH_RETURN_IF_ERROR(ReadField(doc, "now", "", ReadTime, &out.now));
  uint64_t workers = 0;
  BERTH_RETURN_IF_ERROR(RequireField(doc, "workers", "", ReadUnsigned, &workers));
  if (workers > static_cast<uint64_t>(INT32_MAX))
    return FieldError("workers", "at most " + std::to_string(INT32_MAX) + " workers");
  out.workers = static_cast<int64_t>(workers);
  BERTH_RETURN_IF_ERROR(RequireField(doc, "classes", "", ReadClasses, &out.classes));
  if (doc.contains("requestors")) {
    BERTH_RETURN_IF_ERROR(ReadField(doc, "requestors", "", ReadRequestors, &out.requestors));
  } else {
    for (const ClassShare& c : out.classes)
      out.requestors.push_back({"^" + RE2::QuoteMeta(c.name) + "$", c.name});
  }
  if (auto it = doc.find("rebalance"); it != doc.end())
    BERTH_RETURN_IF_ERROR(ReadRebalance(*it, "rebalance", &out));
  if (auto it = doc.find("jobs"); it != doc.end())
    BERTH_RETURN_IF_ERROR(ReadJobs(*it, "jobs", out.now, &out.jobs));
  return out;
}

Result<fairshare::Admission> MakeAdmission(const AdmissionDocument& doc) {
  fairshare::Config config;
  BERTH_RETURN_IF_ERROR(config.SetClassLoadPercents(doc.classes).WithContext("classes"));
  BERTH_RETURN_IF_ERROR(config.SetRequestorMap(doc.requestors).WithContext("requestors"));
  config.SetRebalanceThreshold(doc.rebalance_threshold);
  config.SetRebalanceMinDuration(doc.rebalance_min_duration);
  fairshare::Admission admission(std::move(config));
  if (doc.over_since) admission.set_over_since(doc.now - *doc.over_since);
  return admission;
}

nlohmann::ordered_json EncodeAdmissionResult(const AdmissionDocument& doc,
                                             const fairshare::Config& config,
                                             const fairshare::IterationResult& result) {
  using OJson = nlohmann::ordered_json;
  OJson start = OJson::object(), stop = OJson::object();
  for (fairshare::ClassIndex c = 0; c < config.class_count(); ++c) {
    start[config.ClassName(c)] = result.start[c];
    stop[config.ClassName(c)] = result.stop[c];
  }
  OJson start_tasks = OJson::array(), stop_tasks = OJson::array();
  for (const fairshare::TaskRef& t : result.start_tasks)
    start_tasks.push_back(doc.jobs[t.job].id + "/" + doc.jobs[t.job].waiting[t.task].id);
  for (const fairshare::TaskRef& t : result.stop_tasks)
    stop_tasks.push_back(doc.jobs[t.job].id + "/" + doc.jobs[t.job].running[t.task].id);
  return OJson{{"start", std::move(start)},
               {"stop", std::move(stop)},
               {"start_tasks", std::move(start_tasks)},
               {"stop_tasks", std::move(stop_tasks)}};
}

}  // namespace berth::api
