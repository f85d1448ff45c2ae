#include "daemon/events/event_log.h"

#include <gtest/gtest.h>

#include <thread>

#include "daemon/events/describe.h"

namespace berth::daemon {
namespace {

store::Change Put(std::string kind, std::string id, std::string body) {
  return {store::Write::Op::kPut, std::move(kind), std::move(id), std::move(body), 0};
}

std::vector<std::string> Keys(const EventLog::Batch& batch) {
  std::vector<std::string> keys;
  for (const RecordedEvent& e : batch.events) keys.push_back(std::to_string(e.index) + ":" + e.id);
  return keys;
}

class EventLogTest : public testing::Test {
 protected:
  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
};

// Only the kinds an operator follows are recorded; an event's index is its
// commit's revision, and its time the clock's when it was recorded.
TEST_F(EventLogTest, RecordsTheKindsThatMatterAtTheirRevision) {
  EventLog log(clock_);
  log.Record(3, {Put("task", "web.1.1", "{}"),
                 Put("node_token", "t", "secret"),
                 {store::Write::Op::kDelete, "node", "n1", "", 3}});
  const EventLog::Batch batch = log.Read(0, 10);
  EXPECT_EQ(Keys(batch), (std::vector<std::string>{"3:web.1.1", "3:n1"}));
  EXPECT_TRUE(batch.events[1].deleted);
  EXPECT_EQ(batch.events[0].time, clock_.Now());
  EXPECT_EQ(batch.missed_through, 0);
  EXPECT_EQ(log.newest_index(), 3);
  log.Record(2, {Put("task", "late", "{}")});  // not after the newest: ignored
  EXPECT_EQ(log.Read(0, 10).events.size(), 2u);
}

// The log keeps the newest `capacity` events; a reader asking for older
// ones is told which it missed, and reads whole frames.
TEST_F(EventLogTest, KeepsTheNewestAndSaysWhatWasDropped) {
  EventLog log(clock_, {.capacity = 3});
  log.Record(1, {Put("task", "a", "{}")});
  log.Record(2, {Put("task", "b", "{}"), Put("task", "c", "{}")});
  log.Record(5, {Put("task", "d", "{}"), Put("task", "e", "{}")});
  EventLog::Batch batch = log.Read(1, 10);
  EXPECT_EQ(Keys(batch), (std::vector<std::string>{"2:c", "5:d", "5:e"}));
  EXPECT_EQ(batch.missed_through, 2);
  batch = log.Read(3, 10);
  EXPECT_EQ(Keys(batch), (std::vector<std::string>{"5:d", "5:e"}));
  EXPECT_EQ(batch.missed_through, 0);
  // A frame is never cut: a limit of one still reads both of revision 5.
  EXPECT_EQ(Keys(log.Read(5, 1)), (std::vector<std::string>{"5:d", "5:e"}));
  EXPECT_TRUE(log.Read(6, 10).events.empty());
}

// A commit larger than the log keeps its last `capacity` changes.
TEST_F(EventLogTest, ABatchLargerThanTheLogKeepsItsLast) {
  EventLog log(clock_, {.capacity = 2});
  log.Record(7, {Put("task", "a", "{}"), Put("task", "b", "{}"), Put("task", "c", "{}")});
  const EventLog::Batch batch = log.Read(1, 10);
  EXPECT_EQ(Keys(batch), (std::vector<std::string>{"7:b", "7:c"}));
  EXPECT_EQ(batch.missed_through, 7);
  EXPECT_EQ(log.recorded(), 3u);
}

// Changes the store left out of a commit (more than the log keeps), and
// commits never recorded (before recording started), are missed too.
TEST_F(EventLogTest, CutChangesAndUnrecordedCommitsAreMissed) {
  EventLog log(clock_, {.capacity = 10});
  log.Missed(4);
  log.Record(6, {Put("task", "a", "{}")});
  EXPECT_EQ(log.Read(1, 10).missed_through, 4);
  EXPECT_EQ(log.Read(5, 10).missed_through, 0);
  log.Record(8, {Put("task", "b", "{}")}, /*cut=*/3);
  const EventLog::Batch batch = log.Read(7, 10);
  EXPECT_EQ(batch.missed_through, 8);
  EXPECT_EQ(Keys(batch), (std::vector<std::string>{"8:b"}));
  EXPECT_EQ(log.recorded(), 5u);
  EXPECT_TRUE(log.Read(9, 0).events.empty());
}

// A reader waiting for an index beyond the newest wakes when it comes, or
// when the log closes.
TEST_F(EventLogTest, AWaitEndsWhenTheIndexIsRecordedOrTheLogCloses) {
  EventLog log(clock_);
  EXPECT_FALSE(log.WaitFor(1, Duration{0}));
  std::thread writer([&] { log.Record(4, {Put("service", "web", "{}")}); });
  EXPECT_TRUE(log.WaitFor(4, std::chrono::seconds(10)));
  writer.join();
  std::thread closer([&] { log.Close(); });
  EXPECT_FALSE(log.WaitFor(5, std::chrono::seconds(10)));
  closer.join();
  EXPECT_TRUE(log.closed());
}

RecordedEvent StoredChange(std::string kind, std::string id, std::string body) {
  return {9, Timestamp{}, false, std::move(kind), std::move(id), std::move(body)};
}

TEST(DescribeEvent, SaysWhatHappenedFromTheStoredBody) {
  DescribedEvent d = Describe(StoredChange(
      "task", "web.1.3",
      R"({"service":"web","node":"n1","slot":1,"state":"failed","message":"exited with 2"})"));
  EXPECT_EQ(d.topic, "task");
  EXPECT_EQ(d.type, "failed");
  EXPECT_EQ(d.message, "exited with 2");
  EXPECT_EQ(d.attributes, (std::map<std::string, std::string>{
                              {"service", "web"}, {"node", "n1"}, {"slot", "1"}}));
  d = Describe(
      StoredChange("task", "web.1.3", R"({"state":"running","desired_state":"shutdown"})"));
  EXPECT_EQ(d.type, "stopping");
  EXPECT_EQ(d.message, "task web.1.3 stopping");
  d = Describe(StoredChange("node", "n1", R"({"state":"ready","availability":"drain"})"));
  EXPECT_EQ(d.type, "drain");
  EXPECT_EQ(d.message, "node n1 is ready, availability drain");
  d = Describe(StoredChange("node", "n1", R"({"state":"down","availability":"drain"})"));
  EXPECT_EQ(d.type, "down");
  d = Describe(StoredChange("update", "web", R"({"state":"paused","message":"update paused"})"));
  EXPECT_EQ(d.topic, "rollout");
  EXPECT_EQ(d.type, "paused");
  EXPECT_EQ(d.attributes.at("service"), "web");
  d = Describe(StoredChange("leader", "berthd", R"({"id":"a:1","address":"https://a:1"})"));
  EXPECT_EQ(d.type, "elected");
  EXPECT_EQ(d.message, "berthd a:1 leads (https://a:1)");
  RecordedEvent removed = StoredChange("service", "web", "");
  removed.deleted = true;
  EXPECT_EQ(Describe(removed).type, "remove");
  d = Describe(StoredChange("job", "j", "not json"));
  EXPECT_EQ(d.type, "update");
  EXPECT_EQ(d.message, "job j stored");
}

TEST(EventFilter, TopicsAndFiltersSelectEvents) {
  const RecordedEvent task =
      StoredChange("task", "web.1.3", R"({"service":"web","node":"n1","state":"running"})");
  const RecordedEvent node = StoredChange("node", "n1", R"({"state":"down"})");
  const auto matches = [](const std::string& topics, const std::string& filters,
                          const RecordedEvent& e) {
    Result<EventFilter> f = EventFilter::Parse(topics, filters);
    EXPECT_TRUE(f.ok()) << f.status().message();
    return f.ok() && f->Matches(e, Describe(e));
  };
  EXPECT_TRUE(matches("", "", task));
  EXPECT_TRUE(matches("task", "", task));
  EXPECT_FALSE(matches("node", "", task));
  EXPECT_TRUE(matches("node:n2,node:n1", "", node));
  EXPECT_FALSE(matches("task:web.1.4", "", task));
  EXPECT_TRUE(matches("", "type=running,service=web", task));
  EXPECT_TRUE(matches("", "type:failed,type:running", task));
  EXPECT_FALSE(matches("", "type=running,service=db", task));
  EXPECT_TRUE(matches("", "node=n1", task));  // the task's node
  EXPECT_TRUE(matches("", "node=n1", node));  // the node itself
  EXPECT_FALSE(matches("", "node=n2", node));
}

TEST(EventFilter, UnknownTopicsAndFiltersNameTheValidOnes) {
  EXPECT_EQ(EventFilter::Parse("pods", "").status().message(),
            "unknown event topic 'pods': the topics are node, service, task, job, class, "
            "rollout, leader");
  EXPECT_EQ(EventFilter::Parse("", "colour=red").status().message(),
            "unknown event filter 'colour': the filters are topic, type, key, service, job, "
            "node");
  EXPECT_EQ(EventFilter::Parse("", "type").status().message(), "filter 'type' is not KEY:VALUE");
  EXPECT_EQ(EventFilter::Parse("node:", "").status().message(),
            "topic 'node:' names no key: use node or node:KEY");
}

}  // namespace
}  // namespace berth::daemon
