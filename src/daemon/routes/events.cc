// The event stream: GET /v1/events (docs/api.md, "Events").
#include <memory>

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

std::string Line(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace

// What one stream asked for, checked before the answer starts.
struct EventStreamRequest {
  int64_t from = 0;
  bool follow = true;
  Duration heartbeat{};
  EventFilter filter;
};

namespace {

Result<EventStreamRequest> ParseStreamRequest(const ApiRequest& r, int64_t newest) {
  EventStreamRequest asked;
  Result<EventFilter> filter = EventFilter::Parse(r.Query("topic"), r.Query("filter"));
  if (!filter.ok()) return filter.status();
  asked.filter = std::move(*filter);
  Result<int64_t> from = api::QueryCount(r, "index", newest + 1);
  if (!from.ok()) return from.status();
  asked.from = *from;
  Result<int64_t> heartbeat = api::QueryCount(r, "heartbeat", 30);
  if (!heartbeat.ok()) return heartbeat.status();
  if (*heartbeat < 1 || *heartbeat > 300)
    return Status::InvalidArgument("heartbeat: expected seconds from 1 to 300, got '" +
                                   r.Query("heartbeat") + "'");
  asked.heartbeat = std::chrono::seconds(*heartbeat);
  const std::string follow = r.Query("follow");
  if (!follow.empty() && follow != "true" && follow != "false")
    return Status::InvalidArgument("follow: expected true or false, got '" + follow + "'");
  asked.follow = follow != "false";
  return asked;
}

}  // namespace

Result<ApiResponse> Daemon::Events(const ApiRequest& r) {
  Result<EventStreamRequest> asked = ParseStreamRequest(r, events_->newest_index());
  if (!asked.ok()) return asked.status();
  if (event_streams_.fetch_add(1) >= max_event_streams_) {
    --event_streams_;
    return api::ErrorAnswer(429, "too_many_requests",
                            std::to_string(max_event_streams_) +
                                " event streams are open already (a quarter of --threads): try "
                                "again later");
  }
  // The slot is given back when the answer goes, streamed or not (a HEAD
  // request, a client gone before the headers).
  std::shared_ptr<void> slot(nullptr, [this](void*) { --event_streams_; });
  if (Status following = store_->FollowCommits(); !following.ok()) return following;
  ApiResponse response;
  response.content_type = "application/x-ndjson";
  response.stream = [this, asked = std::move(*asked), slot](const ApiResponse::Write& write) {
    StreamEvents(asked, write);
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
  while (!events_->closed() && Steady::now() < end) {
    const EventLog::Batch batch = events_->Read(next, kReadLimit);
    if (!SendBatch(asked, batch, next, send)) return;
    if (!batch.events.empty()) next = batch.events.back().index + 1;
    next = std::max(next, batch.missed_through + 1);  // said once
    if (batch.events.empty() && !asked.follow) return;
    if (Steady::now() - last_line >= asked.heartbeat) {
      if (!send("{}\n")) return;
    } else if (batch.events.size() < kReadLimit) {
      if (!asked.follow) return;
      (void)store_->FollowCommits();  // again after the feed was lost
      events_->WaitFor(next, std::chrono::ceil<Duration>(std::min(end, last_line + asked.heartbeat) -
                                                         Steady::now()));
    }
  }
}

// The batch's missed line and frames (the events of one index that the
// filter takes); false when the client went away.
bool Daemon::SendBatch(const EventStreamRequest& asked, const EventLog::Batch& batch, int64_t from,
                       const std::function<bool(const std::string&)>& send) {
  if (batch.missed_through != 0) {
    const std::string message =
        "events " + std::to_string(from) + " to " + std::to_string(batch.missed_through) +
        " are not kept here (berthd keeps the last " + std::to_string(events_->capacity()) +
        ", --event-buffer, since it started)";
    if (!send(Line({{"missed", {{"from", from}, {"through", batch.missed_through}}},
                    {"message", message}})))
      return false;
  }
  Json frame;
  const auto flush = [&] {
    return frame.is_null() || frame["events"].empty() || send(Line(frame));
  };
  for (const RecordedEvent& e : batch.events) {
    if (!frame.is_null() && frame["index"] != e.index) {
      if (!flush()) return false;
      frame = nullptr;
    }
    if (frame.is_null()) frame = {{"index", e.index}, {"events", Json::array()}};
    const DescribedEvent d = Describe(e);
    if (asked.filter.Matches(e, d)) frame["events"].push_back(EventJson(e, d));
  }
  return flush();
}

void Daemon::AddEventRoutes() {
  server_->Route("GET", "/v1/events", [this](const ApiRequest& r) { return Events(r); });
}

}  // namespace berth::daemon
