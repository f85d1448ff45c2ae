// GET /v1/events from a berthd on MemoryStore and a ManualClock: what the
// control loop, the registries and the API do appears as events, in order.
#include <gtest/gtest.h>

#include <future>
#include <sstream>
#include <thread>

#include "daemon/daemon_test_support.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

class EventsTest : public DaemonTest {
 protected:
  void SetUp() override {
    Open(1 << 20);
    CatchUp();
  }
  void TearDown() override { Close(); }
  void Configure(DaemonOptions& options) override {
    options.store = store_;
    options.clock = &clock_;
    options.events.capacity = capacity_;
  }
  void CatchUp() { ASSERT_TRUE(daemon_->loop().WaitBlocked(std::chrono::seconds(20))); }
  void Advance(Duration d) {
    CatchUp();
    clock_.Advance(d);
    CatchUp();
  }
  void Ok(const std::string& method, const std::string& path, const Json& body = nullptr) {
    const auto [status, answer] = Call(method, path, body.is_null() ? "" : body.dump());
    ASSERT_LT(status, 300) << method << " " << path << ": " << answer.dump();
    CatchUp();
  }

  // The lines of GET /v1/events?follow=false&<query>.
  std::vector<Json> Lines(const std::string& query) {
    httplib::Result r = client_->Get(("/v1/events?follow=false&" + query).c_str());
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/x-ndjson");
    std::vector<Json> lines;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
    return lines;
  }
  // "topic type key" of each event from index `from`, in order.
  std::vector<std::string> Events(int64_t from = 1, const std::string& query = "") {
    std::vector<std::string> out;
    for (const Json& frame : Lines("index=" + std::to_string(from) + "&" + query)) {
      for (const Json& e : frame.value("events", Json::array())) {
        EXPECT_EQ(e["index"], frame["index"]);
        out.push_back(e["topic"].get<std::string>() + " " + e["type"].get<std::string>() + " " +
                      e["key"].get<std::string>());
      }
    }
    return out;
  }
  // Whether `expected` appear in `events` in this order (others between).
  static bool InOrder(const std::vector<std::string>& events,
                      const std::vector<std::string>& expected) {
    auto at = events.begin();
    for (const std::string& e : expected) {
      at = std::find(at, events.end(), e);
      if (at == events.end()) return false;
      ++at;
    }
    return true;
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  std::shared_ptr<store::MemoryStore> store_ = std::make_shared<store::MemoryStore>();
  size_t capacity_ = 10000;
};

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// A drain and a node down each stop the node's task with the loop's reason
// and start its replacement elsewhere, in that order.
TEST_F(EventsTest, ADrainAndANodeDownAreEventsFollowedByTheirTasks) {
  Ok("POST", "/v1/nodes", {{"id", "n1"}, {"resources", {{"cpu", 4}}}});
  Ok("POST", "/v1/services", {{"id", "web"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 1}}}}}});
  Ok("POST", "/v1/nodes", {{"id", "n2"}, {"resources", {{"cpu", 4}}}});
  const Json web1 = Call("GET", "/v1/tasks?service=web").second["tasks"][0];
  ASSERT_EQ(web1["node"], "n1");
  std::vector<std::string> events = Events();
  EXPECT_TRUE(InOrder(events, {"node ready n1", "service update web", "task assigned " +
                                   web1["id"].get<std::string>(),
                               "task running " + web1["id"].get<std::string>(), "node ready n2"}))
      << Joined(events);
  const int64_t before_drain = daemon_->events().newest_index() + 1;
  Ok("POST", "/v1/nodes/n1/drain");
  const Json web2 = Call("GET", "/v1/tasks?service=web&state=running").second["tasks"][0];
  ASSERT_EQ(web2["node"], "n2");
  events = Events(before_drain);
  EXPECT_TRUE(InOrder(events, {"node drain n1", "task shutdown " + web1["id"].get<std::string>(),
                               "task running " + web2["id"].get<std::string>()}))
      << Joined(events);
  const int64_t before_down = daemon_->events().newest_index() + 1;
  Ok("PATCH", "/v1/nodes/n2", {{"state", "down"}});
  events = Events(before_down);
  // n2 is down and n1 drained: the task is stopped where it is and its
  // replacement waits.
  EXPECT_TRUE(InOrder(events, {"node down n2", "task stopping " + web2["id"].get<std::string>()}))
      << Joined(events);
  EXPECT_EQ(Events(before_down, "filter=type:pending").size(), 1u);
  // The task's event carries the loop's words and its service and node.
  for (const Json& frame : Lines("index=" + std::to_string(before_down) + "&topic=task")) {
    for (const Json& e : frame["events"]) {
      EXPECT_EQ(e["attributes"]["service"], "web");
      EXPECT_FALSE(e["message"].get<std::string>().empty());
    }
  }
}

// A rollout whose new tasks fail pauses (failure_action pause); a
// rebalance moves a task to a new node. Each is a rollout event.
TEST_F(EventsTest, APausedRolloutAndARebalanceAreRolloutEvents) {
  Ok("POST", "/v1/nodes", {{"id", "n1"}, {"resources", {{"cpu", 4}}}});
  Ok("POST", "/v1/services", {{"id", "web"},
                              {"replicas", 2},
                              {"task", {{"resources", {{"cpu", 1}}}}},
                              {"update_config", {{"failure_action", "pause"}, {"monitor", "5s"}}},
                              {"restart_policy", {{"delay", "0s"}}}});
  Ok("POST", "/v1/nodes", {{"id", "n2"}, {"resources", {{"cpu", 4}}}});
  int64_t from = daemon_->events().newest_index() + 1;
  Ok("POST", "/v1/services/web/rebalance");
  Advance(std::chrono::seconds(6));  // past the monitor: the rebalance completes
  std::vector<std::string> events = Events(from);
  EXPECT_TRUE(InOrder(events, {"service update web", "rollout updating web",
                               "rollout completed web"}))
      << Joined(events);
  const Json tasks = Call("GET", "/v1/tasks?service=web&state=running").second["tasks"];
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_NE(tasks[0]["node"], tasks[1]["node"]);
  from = daemon_->events().newest_index() + 1;
  Ok("PATCH", "/v1/services/web", {{"run", {{"duration", 1}, {"outcome", "fail"}}}});
  Advance(std::chrono::seconds(2));
  events = Events(from);
  EXPECT_TRUE(InOrder(events, {"service update web", "rollout updating web", "task failed",
                               "rollout paused web"}) ||
              InOrder(events, {"service update web", "rollout updating web",
                               "rollout paused web"}))
      << Joined(events);
  EXPECT_EQ(Events(from, "topic=rollout:web&filter=type:paused"),
            (std::vector<std::string>{"rollout paused web"}));
}

// Resuming from an index gives exactly the events from there: those of
// one read from the start, from that index on.
TEST_F(EventsTest, ResumingFromAnIndexGivesExactlyTheMissedEvents) {
  Ok("POST", "/v1/nodes", {{"id", "n1"}, {"resources", {{"cpu", 4}}}});
  Ok("POST", "/v1/services", {{"id", "web"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", 1}}}}}});
  const std::vector<Json> all = Lines("index=1");
  ASSERT_GE(all.size(), 3u);
  const int64_t middle = all[all.size() / 2]["index"];
  const std::vector<Json> resumed = Lines("index=" + std::to_string(middle));
  EXPECT_EQ(resumed, std::vector<Json>(all.begin() + all.size() / 2, all.end()));
}

// Events beyond the buffer are dropped, and a reader from before them is
// told which.
class SmallEventBufferTest : public EventsTest {
 protected:
  SmallEventBufferTest() { capacity_ = 4; }
};

TEST_F(SmallEventBufferTest, AReaderFromADroppedIndexIsToldWhatItMissed) {
  Ok("POST", "/v1/nodes", {{"id", "n1"}, {"resources", {{"cpu", 4}}}});
  Ok("POST", "/v1/services", {{"id", "web"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", 1}}}}}});
  const std::vector<Json> lines = Lines("index=1");
  ASSERT_FALSE(lines.empty());
  ASSERT_TRUE(lines[0].contains("missed")) << lines[0].dump();
  EXPECT_EQ(lines[0]["missed"]["from"], 1);
  EXPECT_GE(lines[0]["missed"]["through"], 1);
  size_t events = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_GE(lines[i]["index"], lines[0]["missed"]["through"]);
    events += lines[i]["events"].size();
  }
  EXPECT_EQ(events, 4u);
}

TEST_F(EventsTest, BadQueriesAre400WithTheValidNamesAndChangeNothing) {
  const int64_t revision = Revision();
  const std::pair<std::string, std::string> cases[] = {
      {"topic=pods", "unknown event topic 'pods': the topics are node, service, task, job, "
                     "class, rollout, leader"},
      {"filter=colour:red", "unknown event filter 'colour': the filters are topic, type, key, "
                            "service, job, node"},
      {"filter=topic:pods", "unknown event topic 'pods': the topics are node, service, task, job, "
                            "class, rollout, leader"},
      {"index=-1", "index: expected a non-negative integer, got '-1'"},
      {"index=x", "index: expected a non-negative integer, got 'x'"},
      {"heartbeat=0", "heartbeat: expected seconds from 1 to 300, got '0'"},
      {"follow=maybe", "follow: expected true or false, got 'maybe'"}};
  for (const auto& [query, message] : cases) {
    const auto [status, body] = Call("GET", "/v1/events?" + query);
    EXPECT_EQ(status, 400) << query;
    EXPECT_EQ(body["error"]["message"], message) << query;
  }
  EXPECT_EQ(Revision(), revision);
}

// A stream asked for an index beyond the newest waits: heartbeats until the
// index comes, then its frame.
TEST_F(EventsTest, AnIndexBeyondTheNewestWaitsForIt) {
  const int64_t next = Revision() + 1;
  std::vector<std::string> lines;
  std::mutex mu;
  std::condition_variable cv;
  auto client = NewClient();
  client->set_bearer_token_auth(daemon_->token().c_str());
  std::thread reader([&] {
    client->Get(("/v1/events?heartbeat=1&index=" + std::to_string(next)).c_str(),
                [&](const char* data, size_t size) {
                  std::lock_guard lock(mu);
                  lines.emplace_back(data, size);
                  cv.notify_all();
                  return std::string_view(data, size).find("\"node\"") == std::string_view::npos;
                });
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !lines.empty(); }));
    EXPECT_EQ(lines[0], "{}\n");  // a heartbeat, nothing else yet
  }
  Ok("POST", "/v1/nodes", {{"id", "n1"}, {"resources", {{"cpu", 4}}}});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] {
      return lines.back().find("\"node\"") != std::string::npos;
    })) << lines.back();
    EXPECT_GE(Json::parse(lines.back())["index"].get<int64_t>(), next);
  }
  reader.join();
}

// A stream from before recording started says so once, then heartbeats.
TEST_F(EventsTest, AMissedRangeIsSaidOnce) {
  std::vector<std::string> lines;
  auto client = NewClient();
  client->set_bearer_token_auth(daemon_->token().c_str());
  int heartbeats = 0;
  client->Get("/v1/events?heartbeat=1&index=1", [&](const char* data, size_t size) {
    lines.emplace_back(data, size);
    heartbeats += lines.back() == "{}\n";
    return heartbeats < 2;
  });
  ASSERT_GE(lines.size(), 3u);
  EXPECT_NE(lines[0].find("\"missed\""), std::string::npos) << lines[0];
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(lines[i], "{}\n");
}

// A client that opens a stream and never reads does not hold the control
// loop back: its changes are recorded while the stream waits.
TEST_F(EventsTest, AClientThatNeverReadsDoesNotSlowTheLoop) {
  httplib::Client idle(daemon_->url());
  idle.set_ca_cert_store(tls::NewTrustStore(daemon_->client_tls().trust_pem));
  idle.set_bearer_token_auth(daemon_->token().c_str());
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::thread reader([&] {
    idle.Get("/v1/events?index=1", [&](const char*, size_t) {
      released.wait();  // reads nothing more until the test is done
      return false;
    });
  });
  Ok("POST", "/v1/nodes", {{"id", "n1"}, {"resources", {{"cpu", 64}}}});
  Ok("POST", "/v1/services", {{"id", "web"}, {"replicas", 50}, {"task", {{"resources", {{"cpu", 1}}}}}});
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  EXPECT_EQ(Call("GET", "/v1/tasks?service=web&state=running").second["tasks"].size(), 50u);
  EXPECT_GE(daemon_->events().recorded(), 100u);
  release.set_value();
  reader.join();
}

}  // namespace
}  // namespace berth::daemon
