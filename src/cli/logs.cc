#include "cli/logs.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <ostream>
#include <thread>
#include <vector>

#include "core/time.h"

namespace berth::cli {
namespace {

using api::Json;

// One line of a task's log, as the node gave it.
struct Line {
  int64_t time_ns = 0;
  std::string prefix, stream, text;
};

// RFC 3339 with nanoseconds, as `docker logs --timestamps` prints.
std::string Nanos(int64_t ns) {
  const Timestamp ms{Duration{ns / 1'000'000}};
  std::string text = FormatRfc3339(ms);  // ...T12:00:00.123Z or ...T12:00:00Z
  if (text.back() == 'Z') text.pop_back();
  if (const size_t dot = text.find('.'); dot != std::string::npos) text.resize(dot);
  char fraction[16];
  std::snprintf(fraction, sizeof(fraction), ".%09lldZ", static_cast<long long>(ns % 1'000'000'000));
  return text + fraction;
}

void Print(const Line& line, const LogsOptions& options, std::ostream& out) {
  if (!line.prefix.empty()) out << line.prefix << "    | ";
  if (options.timestamps) out << Nanos(line.time_ns) << " ";
  out << line.text << "\n";
}

// A task being read: its id, prefix, the last seq shown, and whether its
// node says it ended.
struct Reader {
  std::string task, prefix;
  uint64_t after = 0;
  bool ended = false;
};

// Reads `r`'s new lines into `lines`; false (with the reason on `err`) when
// berthd cannot give them.
bool ReadNew(api::ApiClient& client, Reader& r, int64_t tail, std::vector<Line>& lines,
             std::ostream& err) {
  Result<Json> answer =
      client.Call("GET", "/v1/tasks/" + r.task + "/logs?after=" + std::to_string(r.after) +
                             (tail > 0 ? "&tail=" + std::to_string(tail) : ""));
  // A service's task that has no logs (simulated, or its node removed) is
  // left out; a single task's absence is the answer.
  if (!answer.ok() && answer.status().code() == StatusCode::kNotFound && !r.prefix.empty()) {
    r.ended = true;
    return true;
  }
  if (!answer.ok()) {
    err << "berth: " << answer.status().message() << "\n";
    return false;
  }
  for (const Json& l : (*answer)["lines"]) {
    lines.push_back(
        {l.value("time", int64_t{0}), r.prefix, l.value("stream", ""), l.value("text", "")});
    r.after = std::max<uint64_t>(r.after, l.value("seq", uint64_t{0}));
  }
  r.ended = answer->value("ended", false);
  return true;
}

int Follow(api::ApiClient& client, std::vector<Reader>& readers, const LogsOptions& options,
           std::ostream& out, std::ostream& err) {
  bool first = true;
  for (;;) {
    std::vector<Line> lines;
    bool all_ended = true;
    for (Reader& r : readers) {
      if (!first && r.ended) continue;
      if (!ReadNew(client, r, first ? options.tail : 0, lines, err)) return 1;
      all_ended = all_ended && r.ended;
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const Line& a, const Line& b) { return a.time_ns < b.time_ns; });
    for (const Line& line : lines) Print(line, options, out);
    out.flush();
    first = false;
    if (!options.follow || all_ended) return 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));  // a client's polling interval
  }
}

}  // namespace

void AddLogsFlags(CLI::App& verb, LogsOptions& options) {
  verb.add_flag("-f,--follow", options.follow, "keep printing new lines until the task ends");
  verb.add_option("-n,--tail", options.tail, "only the last N lines (of each task)")
      ->check(CLI::NonNegativeNumber);
  verb.add_flag("-t,--timestamps", options.timestamps, "print when each line was written");
}

int PrintTaskLogs(api::ApiClient& client, const std::string& task, const LogsOptions& options,
                  std::ostream& out, std::ostream& err) {
  Result<Json> found = client.Call("GET", "/v1/tasks/" + task);
  if (!found.ok()) {
    err << "berth: " << found.status().message() << "\n";
    return 1;
  }
  std::vector<Reader> readers = {{found->value("id", task), "", 0, false}};
  return Follow(client, readers, options, out, err);
}

int PrintServiceLogs(api::ApiClient& client, const std::string& service, const LogsOptions& options,
                     std::ostream& out, std::ostream& err) {
  Result<Json> tasks = client.Call("GET", "/v1/tasks?service=" + service);
  if (!tasks.ok()) {
    err << "berth: " << tasks.status().message() << "\n";
    return 1;
  }
  std::vector<Reader> readers;
  for (const Json& t : (*tasks)["tasks"]) {
    if (t.value("node", "").empty()) continue;  // never placed: no logs
    const std::string id = t.value("id", ""), name = t.value("name", id);
    readers.push_back(
        {id, name + "." + id.substr(id.rfind('.') + 1) + "@" + t.value("node", ""), 0, false});
  }
  if (readers.empty()) {
    err << "berth: service " << service << " has no task that was placed on a node\n";
    return 1;
  }
  return Follow(client, readers, options, out, err);
}

// A job's tasks are prefixed "<task id>@<node>": a job's task is known by
// its id ("j.3"), not by a slot.
int PrintJobLogs(api::ApiClient& client, const std::string& job, const LogsOptions& options,
                 std::ostream& out, std::ostream& err) {
  if (Result<Json> found = client.Call("GET", "/v1/jobs/" + job); !found.ok()) {
    err << "berth: " << found.status().message() << "\n";
    return 1;
  }
  Result<Json> tasks = client.Call("GET", "/v1/tasks?job=" + job);
  if (!tasks.ok()) {
    err << "berth: " << tasks.status().message() << "\n";
    return 1;
  }
  std::vector<Reader> readers;
  for (const Json& t : (*tasks)["tasks"]) {
    if (t.value("node", "").empty()) continue;  // not placed now: no logs to read
    const std::string id = t.value("id", "");
    readers.push_back({id, id + "@" + t.value("node", ""), 0, false});
  }
  if (readers.empty()) {
    err << "berth: job " << job << " has no task placed on a node\n";
    return 1;
  }
  return Follow(client, readers, options, out, err);
}

}  // namespace berth::cli
