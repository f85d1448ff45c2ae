// `berth events [--since X] [--until X] [-f KEY=VALUE]... [--format json]`:
// the cluster's events as `docker events` prints them (docs/cli.md), from
// GET /v1/events, asked again from the next index when berthd ends a
// stream (it bounds each one).
#include "cli/events.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <memory>
#include <optional>

#include "core/names.h"
#include "core/time.h"

namespace berth::cli {
namespace {

struct EventsOptions {
  std::string since, until;
  std::vector<std::string> filters;
  std::string format;
};

// Where the events start or end: an index, or a time (an RFC 3339 one, or
// a duration before now).
struct Bound {
  std::optional<int64_t> index;
  std::optional<Timestamp> time;
};

Result<Bound> ParseBound(const std::string& flag, const std::string& text, const Clock& clock) {
  Bound bound;
  if (text.empty()) return bound;
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 18) {
    bound.index = std::stoll(text);
    return bound;
  }
  if (Result<Duration> ago = ParseDuration(text); ago.ok()) {
    bound.time = clock.Now() - *ago;
    return bound;
  }
  if (Result<Timestamp> at = ParseRfc3339(text); at.ok()) {
    bound.time = *at;
    return bound;
  }
  return Status::InvalidArgument(flag + " " + Quoted(text) +
                                 " is not an event index, a duration (10m) or an RFC 3339 time");
}

// `text` for a URL's query: every byte but letters, digits and -._~ as %XX.
std::string QueryEncoded(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// The query value for the filters given as KEY=VALUE: "KEY:VALUE,..."
// (a comma separates them, so no value may hold one), encoded.
Result<std::string> EventFilterQuery(const std::vector<std::string>& filters) {
  std::string query;
  for (const std::string& f : filters) {
    const size_t equals = f.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == f.size())
      return Status::InvalidArgument("--filter " + Quoted(f) + " is not KEY=VALUE");
    if (f.find(',') != std::string::npos)
      return Status::InvalidArgument("--filter " + Quoted(f) +
                                     " holds a comma: give each value in a --filter of its own");
    query += (query.empty() ? "" : ",") + f.substr(0, equals) + ":" + f.substr(equals + 1);
  }
  return QueryEncoded(query);
}

// "<time> <topic> <type> <key> (k=v, ...): <message>", as docker events.
void PrintEvent(const Json& e, std::ostream& out) {
  out << e.value("time", "") << " " << e.value("topic", "") << " " << e.value("type", "") << " "
      << e.value("key", "");
  if (const auto it = e.find("attributes"); it != e.end() && it->is_object() && !it->empty()) {
    std::string joined;
    for (const auto& [k, v] : it->items())
      joined += (joined.empty() ? "" : ", ") + k + "=" +
                (v.is_string() ? v.get<std::string>() : v.dump());
    out << " (" << joined << ")";
  }
  out << ": " << e.value("message", "") << "\n";
}

// Whether event `e` was recorded before `t` (false when its time is bad).
bool Before(const Json& e, const Timestamp& t) {
  Result<Timestamp> at = ParseRfc3339(e.value("time", ""));
  return at.ok() && *at < t;
}

bool PastUntil(const Json& e, const Bound& until) {
  if (until.index) return e.value("index", int64_t{0}) > *until.index;
  if (!until.time) return false;
  Result<Timestamp> at = ParseRfc3339(e.value("time", ""));
  return at.ok() && *at > *until.time;
}

// From now on: after the store's revision (an event's index is its
// commit's revision); nullopt when berthd cannot say (printed).
std::optional<int64_t> NextIndex(const VerbContext& context) {
  std::optional<Json> health = CallOrSay(context.client, "GET", "/v1/health", nullptr, context.err);
  if (!health) return std::nullopt;
  return health->value("revision", int64_t{0}) + 1;
}

int RunEvents(const EventsOptions& o, const VerbContext& context) {
  Result<Bound> since = ParseBound("--since", o.since, context.clock);
  Result<Bound> until = ParseBound("--until", o.until, context.clock);
  Result<std::string> filter = EventFilterQuery(o.filters);
  for (const Status& s : {since.status(), until.status(), filter.status()}) {
    if (!s.ok()) {
      context.err << "berth: " << s.message() << "\n";
      return 2;
    }
  }
  const bool json = o.format == "json" || context.json;
  const bool follow = o.until.empty();
  // --since a time reads every kept event and skips those before it.
  std::optional<int64_t> next = since->time ? std::optional<int64_t>(1) : since->index;
  if (!next && !(next = NextIndex(context))) return 1;
  bool first = true, lines = false;
  const auto on_line = [&](const Json& line) {
    lines = true;
    if (line.contains("missed")) {
      // What --since a time skips anyway, or told once already.
      if (first && !since->time)
        context.err << "berth: " << line.value("message", "some events were missed") << "\n";
      return true;
    }
    if (!line.contains("index") || !line["index"].is_number_integer()) return true;  // a heartbeat
    next = line["index"].get<int64_t>() + 1;
    for (const Json& e : line.value("events", Json::array())) {
      if (since->time && Before(e, *since->time)) continue;
      if (PastUntil(e, *until)) return false;
      if (json) {
        context.out << e.dump() << "\n";
      } else {
        PrintEvent(e, context.out);
      }
    }
    context.out.flush();
    return true;
  };
  // berthd ends each stream after a while: ask again from the next index;
  // three that end at once without a line mean berthd is stopping.
  for (int empty = 0; empty < 3;) {
    std::string path = "/v1/events?heartbeat=10&follow=" + std::string(follow ? "true" : "false") +
                       "&index=" + std::to_string(*next);
    if (!filter->empty()) path += "&filter=" + *filter;
    lines = false;
    if (Status streamed = context.client.Stream(path, on_line); !streamed.ok()) {
      context.err << "berth: " << streamed.message() << "\n";
      return 1;
    }
    if (!follow) return 0;
    first = false;
    empty = lines ? 0 : empty + 1;
  }
  context.err << "berth: berthd ended the event stream three times without a line: is it "
                 "stopping?\n";
  return 1;
}

}  // namespace

void AddEventsCommand(CLI::App& app, Verbs& verbs) {
  auto o = std::make_shared<EventsOptions>();
  CLI::App* verb = verbs.Add(
      app, "events", "Show the cluster's events as they happen (nodes, services, tasks, ...)",
      [o](const VerbContext& context) { return RunEvents(*o, context); });
  verb->add_option("--since", o->since,
                   "start at this event index, this long ago (10m) or this RFC 3339 time "
                   "(default: from now on)");
  verb->add_option("--until", o->until,
                   "print the kept events up to this index or time and exit (default: follow)");
  verb->add_option("-f,--filter", o->filters,
                   "KEY=VALUE, repeatable: topic, type, key, service, job, node (values of one "
                   "key are alternatives; different keys must all match)");
  verb->add_option("--format", o->format, "json: one JSON object per event")
      ->check(CLI::IsMember({"json"}));
}

}  // namespace berth::cli
