// The event stream: GET /v1/events (docs/api.md, "Events").
#include <charconv>

#include "daemon/daemon.h"
#include "daemon/events/describe.h"
#include "daemon/routes/routes.h"

namespace berth::daemon {
namespace {

// How long one stream lasts at most: it holds a worker thread, so a client
// that never reads gives it back by then; `berth events` asks again from
// where it was.
constexpr Duration kStreamBound = std::chrono::minutes(5);
// Events a frame read takes at most (whole frames).
constexpr size_t kReadLimit = 1024;

Result<int64_t> NumberParam(const ApiRequest& r, const std::string& name, int64_t fallback,
                            int64_t min, int64_t max) {
  const std::string text = r.Query(name);
  if (text.empty()) return fallback;
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max)
    return Status::InvalidArgument("?" + name + "= takes a whole number from " +
                                   std::to_string(min) + " to " + std::to_string(max) + ", not '" +
                                   text + "'");
  return value;
}

std::string Line(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

}  // namespace

// What one stream asked for, checked before the answer starts.
struct EventStreamRequest {
  int64_t from = 0;
  bool follow = true;
  Duration heartbeat{};
  EventFilter filter;
};

Result<ApiResponse> Daemon::Events(const ApiRequest& r) {
  EventStreamRequest asked;
  Result<EventFilter> filter = EventFilter::Parse(r.Query("topic"), r.Query("filter"));
  if (!filter.ok()) return filter.status();
  asked.filter = std::move(*filter);
  Result<int64_t> from = NumberParam(r, "index", events_->newest_index() + 1, 0, INT64_MAX);
  if (!from.ok()) return from.status();
  asked.from = *from;
  Result<int64_t> heartbeat = NumberParam(r, "heartbeat", 30, 1, 300);
  if (!heartbeat.ok()) return heartbeat.status();
  asked.heartbeat = std::chrono::seconds(*heartbeat);
  const std::string follow = r.Query("follow");
  if (!follow.empty() && follow != "true" && follow != "false")
    return Status::InvalidArgument("?follow= takes true or false, not '" + follow + "'");
  asked.follow = follow != "false";
  if (Status following = store_->FollowCommits(); !following.ok()) return following;
  if (event_streams_.fetch_add(1) >= max_event_streams_) {
    --event_streams_;
    return ApiResponse{429,
                       {{"error",
                         {{"code", "too_many_requests"},
                          {"message", std::to_string(max_event_streams_) +
                                          " event streams are open already (a quarter of "
                                          "--threads): try again later"}}}},
                       "",
                       ""};
  }
  ApiResponse response;
  response.content_type = "application/x-ndjson";
  response.stream = [this, asked](const ApiResponse::Write& write) {
    StreamEvents(asked, write);
    --event_streams_;
  };
  return response;
}

// Frames of the events that match, a heartbeat `{}` after `heartbeat`
// without a line, until the client goes, berthd stops or kStreamBound.
void Daemon::StreamEvents(const EventStreamRequest& asked, const ApiResponse::Write& write) {
  using Steady = std::chrono::steady_clock;
  const Steady::time_point end = Steady::now() + kStreamBound;
  Steady::time_point last_line = Steady::now();
  const auto send = [&](const std::string& line) {
    last_line = Steady::now();
    return write(line);
  };
  int64_t next = asked.from;
  for (;;) {
    EventLog::Batch batch = events_->Read(next, kReadLimit);
    if (batch.missed_through != 0) {
      const std::string message =
          "events " + std::to_string(next) + " to " + std::to_string(batch.missed_through) +
          " are no longer kept (berthd keeps the last " + std::to_string(events_->capacity()) +
          ", --event-buffer)";
      if (!send(Line({{"missed", {{"from", next}, {"through", batch.missed_through}}},
                      {"message", message}})))
        return;
    }
    Json frame;
    const auto flush = [&] { return frame.is_null() || frame["events"].empty() || send(Line(frame)); };
    for (const RecordedEvent& e : batch.events) {
      if (!frame.is_null() && frame["index"] != e.index) {
        if (!flush()) return;
        frame = nullptr;
      }
      if (frame.is_null()) frame = {{"index", e.index}, {"events", Json::array()}};
      const DescribedEvent d = Describe(e);
      if (asked.filter.Matches(e, d)) frame["events"].push_back(EventJson(e, d));
    }
    if (!flush()) return;
    if (!batch.events.empty()) next = batch.events.back().index + 1;
    if (batch.events.size() >= kReadLimit) continue;
    if (!asked.follow || events_->closed()) return;
    const Steady::time_point now = Steady::now();
    if (now >= end) return;
    if (now - last_line >= asked.heartbeat) {
      if (!send("{}\n")) return;
      continue;
    }
    events_->WaitFor(next, std::chrono::ceil<Duration>(
                               std::min(end, last_line + asked.heartbeat) - now));
  }
}

void Daemon::AddEventRoutes() {
  server_->Route("GET", "/v1/events", [this](const ApiRequest& r) { return Events(r); });
}

}  // namespace berth::daemon
