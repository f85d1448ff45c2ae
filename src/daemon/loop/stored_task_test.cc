#include "daemon/loop/stored_task.h"

#include <gtest/gtest.h>

namespace berth::daemon {
namespace {

using api::Json;

// Every field survives encoding and decoding, and the text is JSON that
// nlohmann reads back with the same values (quotes, backslashes and
// control characters in a message are escaped).
TEST(StoredTask, EveryFieldRoundTrips) {
  StoredTask t;
  t.id = "batch.7";
  t.job = "batch";
  t.name = "compile";
  t.node = "n-1";
  t.agent = "agent_a";
  t.message = "no suitable node (\"x\" \\ \n\t\x01 café)";
  t.state = TaskState::kFailed;
  t.desired = TaskState::kShutdown;
  t.created_at = *ParseRfc3339("2025-12-31T23:59:59.999Z");
  t.updated_at = *ParseRfc3339("2026-01-01T00:00:01.5Z");
  t.admitted_at = *ParseRfc3339("2026-01-01T00:00:00Z");
  t.assigned_at = *ParseRfc3339("2026-01-01T00:00:00.001Z");
  t.started_at = *ParseRfc3339("2026-01-01T00:00:00.002Z");
  t.run = SimulatedRun{30'000, true};
  t.restart_at = *ParseRfc3339("2026-01-01T00:00:06.5Z");
  const std::string text = EncodeStoredTask(t);
  const Json json = Json::parse(text);
  EXPECT_EQ(json["message"], t.message);
  EXPECT_EQ(json["run"], (Json{{"duration_ms", 30'000}, {"outcome", "fail"}}));
  EXPECT_EQ(json["state"], "failed");
  EXPECT_EQ(json["updated_at"], "2026-01-01T00:00:01.500Z");
  EXPECT_FALSE(json.contains("id"));  // the store's key
  EXPECT_EQ(DecodeStoredTask(json, "batch.7"), t);
  // nlohmann's own dump (keys sorted too) is the same text.
  EXPECT_EQ(json.dump(), text);
}

TEST(StoredTask, AServiceTaskWritesOnlyWhatItHas) {
  StoredTask t;
  t.id = "web.1.17";
  t.service = "web";
  t.slot = 1;
  t.spec_version = 3;
  t.state = TaskState::kPending;
  EXPECT_EQ(EncodeStoredTask(t),
            R"({"service":"web","slot":1,"spec_version":3,"state":"pending"})");
  EXPECT_EQ(DecodeStoredTask(Json::parse(EncodeStoredTask(t)), "web.1.17"), t);
}

// Bodies are read leniently: unknown or unreadable fields take defaults,
// and the copy of the job's template older versions stored is ignored.
TEST(StoredTask, OddBodiesTakeDefaults) {
  const StoredTask t = DecodeStoredTask(
      Json::parse(
          R"({"id": "old.1", "state": "sleeping", "updated_at": "yesterday", "spec_version": -1,
              "task": {"resources": {"cpu": 1}}, "run": {"duration_ms": "long"}})"),
      "j.1");
  EXPECT_EQ(t.id, "j.1");  // the store's key, whatever the body says
  EXPECT_EQ(t.state, TaskState::kNew);
  EXPECT_EQ(t.desired, TaskState::kRunning);
  EXPECT_FALSE(t.updated_at.has_value());
  EXPECT_FALSE(t.spec_version.has_value());
  EXPECT_EQ(t.run, (SimulatedRun{0, false}));
}

}  // namespace
}  // namespace berth::daemon
