// The history checker on histories built by hand: each rule accepts what an
// HA berthd may do and catches, with its exact message, what it may not;
// the JSON lines round-trip; berthd's answers translate into snapshots.
#include "history/history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "history/api_snapshot.h"
#include "history/history_json.h"

namespace berth::history {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Json = nlohmann::json;

constexpr Resources kSmall{500, 256};  // 500m, 256 bytes
constexpr Resources kNode{1000, 512};

ObservedTask Task(std::string id, std::string node, TaskState state, Resources reserves = kSmall) {
  return {std::move(id), "web", 1, std::move(node), state, reserves};
}

Snapshot Read(std::string client, int64_t time_ms, int64_t revision,
              std::vector<ObservedTask> tasks = {}, std::vector<ObservedNode> nodes = {}) {
  return {std::move(client), time_ms, revision, std::move(tasks), std::move(nodes), {}, {}};
}

Write Created(std::string client, int64_t time_ms, ObjectKind kind, std::string id,
              bool acknowledged) {
  return {std::move(client), time_ms,      kind,
          std::move(id),     acknowledged, acknowledged ? "" : "timed out"};
}

Snapshot Final(std::vector<std::string> services, int64_t revision = 50) {
  Snapshot final = Read("checker", 9000, revision);
  final.services = std::move(services);
  return final;
}

// Rule 1: acknowledged creates.

TEST(HistoryWrites, AcknowledgedPresentOnceAndUnacknowledgedEitherWayPass) {
  History h;
  h.writes = {Created("c1", 10, ObjectKind::kService, "a", true),
              Created("c1", 20, ObjectKind::kService, "b", false),  // committed anyway
              Created("c2", 30, ObjectKind::kService, "c", false),  // lost: allowed
              Created("c2", 40, ObjectKind::kNode, "n1", true),
              Created("c2", 50, ObjectKind::kJob, "j", true)};
  h.final_state = Final({"a", "b"});
  h.final_state->nodes = {{"n1", kNode}};
  h.final_state->jobs = {"j"};
  EXPECT_THAT(Check(h), IsEmpty());
}

TEST(HistoryWrites, LostAcknowledgedWrite) {
  History h;
  h.writes = {Created("c1", 120, ObjectKind::kService, "web", true),
              Created("c1", 130, ObjectKind::kJob, "batch", true)};
  h.final_state = Final({}, 57);
  h.final_state->services = {"web"};
  EXPECT_THAT(Check(h), ElementsAre("lost write: job 'batch', acknowledged to client 'c1' at 130 "
                                    "ms, is absent from the final state (client 'checker' at "
                                    "9000 ms, revision 57)"));
}

TEST(HistoryWrites, AcknowledgedWriteTwiceInFinalState) {
  History h;
  h.writes = {Created("c1", 120, ObjectKind::kService, "web", true)};
  h.final_state = Final({"web", "web"}, 57);
  EXPECT_THAT(Check(h), ElementsAre("service 'web', acknowledged to client 'c1' at 120 ms, appears "
                                    "2 times in the final state (client 'checker' at 9000 ms, "
                                    "revision 57)"));
}

TEST(HistoryWrites, OneIdAcknowledgedToTwoClients) {
  History h;
  h.writes = {Created("c1", 120, ObjectKind::kService, "web", true),
              Created("c2", 125, ObjectKind::kService, "web", true)};
  h.final_state = Final({"web"});
  EXPECT_THAT(Check(h), ElementsAre("service 'web' was acknowledged as created twice: to client "
                                    "'c1' at 120 ms and to client 'c2' at 125 ms"));
}

TEST(HistoryWrites, FinalStateMissing) {
  History h;
  h.writes = {Created("c1", 10, ObjectKind::kService, "a", false)};
  EXPECT_THAT(Check(h), IsEmpty());  // nothing acknowledged, nothing to find
  h.writes.push_back(Created("c1", 20, ObjectKind::kService, "b", true));
  EXPECT_THAT(Check(h),
              ElementsAre("no final state recorded: 1 acknowledged writes cannot be checked"));
}

// Rule 2: one node per task.

TEST(HistoryBindings, PendingThenBoundThenEndedOnOneNodePasses) {
  History h;
  h.reads = {Read("c1", 10, 3, {Task("web.1.3", "", TaskState::kPending)}),
             Read("c2", 20, 4, {Task("web.1.3", "n1", TaskState::kAssigned)}),
             Read("c1", 30, 5, {Task("web.1.3", "n1", TaskState::kRunning)})};
  h.final_state = Read("checker", 40, 6, {Task("web.1.3", "n1", TaskState::kComplete)});
  EXPECT_THAT(Check(h), IsEmpty());
}

TEST(HistoryBindings, RollingUpdateTwoTasksOfOneSlotPass) {
  History h;  // start-first: the new task of slot 1 runs before the old one stops
  h.reads = {
      Read("c1", 10, 8,
           {Task("web.1.3", "n1", TaskState::kRunning), Task("web.1.7", "n2", TaskState::kRunning)},
           {{"n1", kNode}, {"n2", kNode}})};
  EXPECT_THAT(Check(h), IsEmpty());
}

TEST(HistoryBindings, TaskSeenOnTwoNodesByTwoClients) {
  History h;
  h.reads = {Read("c1", 1100, 35, {Task("web.1.5", "n1", TaskState::kRunning)}),
             Read("c2", 1150, 36, {Task("web.1.5", "n2", TaskState::kRunning)}),
             Read("c1", 1200, 37, {Task("web.1.5", "n2", TaskState::kRunning)})};
  EXPECT_THAT(Check(h), ElementsAre("task 'web.1.5' bound to two nodes: 'n1' in read 0 (client "
                                    "'c1' at 1100 ms, revision 35) and 'n2' in read 1 (client "
                                    "'c2' at 1150 ms, revision 36)"));
}

TEST(HistoryBindings, FinalStateOnAnotherNode) {
  History h;
  h.reads = {Read("c1", 1100, 35, {Task("web.1.5", "n1", TaskState::kAssigned)})};
  h.final_state = Read("checker", 9000, 57, {Task("web.1.5", "n3", TaskState::kShutdown)});
  EXPECT_THAT(Check(h), ElementsAre("task 'web.1.5' bound to two nodes: 'n1' in read 0 (client "
                                    "'c1' at 1100 ms, revision 35) and 'n3' in the final state "
                                    "(client 'checker' at 9000 ms, revision 57)"));
}

// Rule 3: reservations within capacity.

TEST(HistoryCapacity, HoldsResourcesFromAssignedToRunning) {
  EXPECT_FALSE(HoldsResources(TaskState::kNew));
  EXPECT_FALSE(HoldsResources(TaskState::kPending));
  EXPECT_TRUE(HoldsResources(TaskState::kAssigned));
  EXPECT_TRUE(HoldsResources(TaskState::kStarting));
  EXPECT_TRUE(HoldsResources(TaskState::kRunning));
  for (TaskState ended : {TaskState::kComplete, TaskState::kShutdown, TaskState::kFailed,
                          TaskState::kRejected, TaskState::kRemove, TaskState::kOrphaned})
    EXPECT_FALSE(HoldsResources(ended)) << ToString(ended);
}

TEST(HistoryCapacity, FullNodeWithEndedAndPendingTasksPasses) {
  History h;  // two running tasks fill n1; the ended and the preset pending ones hold nothing
  h.reads = {Read(
      "c1", 10, 9,
      {Task("web.1.3", "n1", TaskState::kRunning), Task("web.2.3", "n1", TaskState::kAccepted),
       Task("web.3.3", "n1", TaskState::kComplete), Task("web.4.3", "n1", TaskState::kFailed),
       Task("web.5.3", "n1", TaskState::kShutdown), Task("web.6.3", "n1", TaskState::kPending)},
      {{"n1", kNode}})};
  EXPECT_THAT(Check(h), IsEmpty());
}

TEST(HistoryCapacity, CpuOverCapacity) {
  History h;
  h.reads = {Read("c1", 10, 40,
                  {Task("web.1.3", "n1", TaskState::kRunning, {500, 0}),
                   Task("web.2.3", "n1", TaskState::kAssigned, {600, 0}),
                   Task("web.3.3", "n2", TaskState::kRunning, {900, 0})},
                  {{"n1", kNode}, {"n2", kNode}})};
  EXPECT_THAT(Check(h), ElementsAre("node 'n1' over capacity in read 0 (client 'c1' at 10 ms, "
                                    "revision 40): its tasks reserve cpu 1100m of 1000m (web.1.3, "
                                    "web.2.3)"));
}

TEST(HistoryCapacity, MemoryOverCapacityInFinalState) {
  History h;
  h.final_state = Read("checker", 9000, 57,
                       {Task("web.1.3", "n1", TaskState::kRunning, {0, 300}),
                        Task("web.2.3", "n1", TaskState::kRunning, {0, 300})},
                       {{"n1", kNode}});
  EXPECT_THAT(Check(h), ElementsAre("node 'n1' over capacity in the final state (client 'checker' "
                                    "at 9000 ms, revision 57): its tasks reserve memory 600 of "
                                    "512 bytes (web.1.3, web.2.3)"));
}

TEST(HistoryCapacity, ManyTasksNamedTenAndCounted) {
  std::vector<ObservedTask> tasks;
  for (int i = 1; i <= 12; ++i)
    tasks.push_back(Task("t." + std::to_string(i), "n1", TaskState::kRunning, {100, 0}));
  History h;
  h.reads = {Read("c1", 10, 3, tasks, {{"n1", kNode}})};
  EXPECT_THAT(Check(h), ElementsAre("node 'n1' over capacity in read 0 (client 'c1' at 10 ms, "
                                    "revision 3): its tasks reserve cpu 1200m of 1000m (t.1, t.2, "
                                    "t.3, t.4, t.5, t.6, t.7, t.8, t.9, t.10 and 2 more)"));
}

TEST(HistoryCapacity, NodeNotListedIsNotJudged) {
  History h;  // n1 was removed between the task list and the node list
  h.reads = {Read("c1", 10, 3, {Task("web.1.3", "n1", TaskState::kRunning, {5000, 0})}, {})};
  EXPECT_THAT(Check(h), IsEmpty());
}

// Rule 4: monotonic reads per client.

TEST(HistoryRevisions, EachClientNonDecreasingPasses) {
  History h;  // clients may lag each other; each only moves forward
  h.reads = {Read("c1", 10, 40), Read("c2", 20, 30), Read("c1", 30, 40), Read("c2", 40, 35)};
  h.final_state = Read("c1", 50, 41);
  EXPECT_THAT(Check(h), IsEmpty());
}

TEST(HistoryRevisions, BackwardsAgainstTheHighestSeen) {
  History h;
  h.reads = {Read("c1", 1100, 42), Read("c2", 1150, 10), Read("c1", 1200, 40),
             Read("c1", 1300, 41)};
  EXPECT_THAT(Check(h),
              ElementsAre("revision went backwards for client 'c1': read 2 (client 'c1' at 1200 "
                          "ms, revision 40) after read 0 (client 'c1' at 1100 ms, revision 42)",
                          "revision went backwards for client 'c1': read 3 (client 'c1' at 1300 "
                          "ms, revision 41) after read 0 (client 'c1' at 1100 ms, revision 42)"));
}

TEST(HistoryRevisions, FinalStateIsItsClientsLastRead) {
  History h;
  h.reads = {Read("checker", 100, 42)};
  h.final_state = Read("checker", 9000, 41);
  EXPECT_THAT(Check(h),
              ElementsAre("revision went backwards for client 'checker': the final state (client "
                          "'checker' at 9000 ms, revision 41) after read 0 (client 'checker' at "
                          "100 ms, revision 42)"));
}

TEST(History, RulesReportInOrder) {
  History h;
  h.writes = {Created("c1", 5, ObjectKind::kService, "web", true)};
  h.reads = {Read("c1", 10, 5,
                  {Task("web.1.5", "n1", TaskState::kRunning, {2000, 0}),
                   Task("web.1.5", "n2", TaskState::kRunning, {0, 0})},
                  {{"n1", kNode}}),
             Read("c1", 20, 4)};
  h.final_state = Final({});
  const std::vector<std::string> violations = Check(h);
  ASSERT_EQ(violations.size(), 4u);
  EXPECT_TRUE(violations[0].starts_with("lost write: service 'web'"));
  EXPECT_TRUE(violations[1].starts_with("task 'web.1.5' bound to two nodes"));
  EXPECT_TRUE(violations[2].starts_with("node 'n1' over capacity"));
  EXPECT_TRUE(violations[3].starts_with("revision went backwards for client 'c1'"));
}

// JSON lines.

History Sample() {
  History h;
  h.writes = {Created("c1", 10, ObjectKind::kService, "web", true),
              Created("c2", 11, ObjectKind::kNode, "n9", false)};
  Snapshot read = Read(
      "c1", 20, 7,
      {Task("web.1.3", "n1", TaskState::kRunning), {"batch.1", "", 0, "", TaskState::kNew, {}}},
      {{"n1", kNode}});
  read.jobs = {"batch"};
  h.reads = {read, Read("c2", 30, 8)};
  h.final_state = Final({"web"});
  return h;
}

TEST(HistoryJson, RoundTripsAndChecksTheSame) {
  const History h = Sample();
  std::stringstream lines;
  WriteJsonLines(h, lines);
  Result<History> back = ReadJsonLines(lines);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, h);
  EXPECT_EQ(Check(*back), Check(h));
}

TEST(HistoryJson, LinesLeaveDefaultsOut) {
  EXPECT_EQ(ToJsonLine(Created("c2", 11, ObjectKind::kNode, "n9", false)),
            R"({"acknowledged":false,"client":"c2","error":"timed out","id":"n9","kind":"node",)"
            R"("time_ms":11,"type":"write"})");
  EXPECT_EQ(ToJsonLine(Read("c1", 20, 7, {{"batch.1", "", 0, "", TaskState::kNew, {}}}), true),
            R"({"client":"c1","jobs":[],"nodes":[],"revision":7,"services":[],)"
            R"("tasks":[{"id":"batch.1","state":"new"}],"time_ms":20,"type":"final"})");
}

TEST(HistoryJson, BadLinesNamed) {
  auto error = [](const std::string& text) {
    std::istringstream in(text);
    Result<History> h = ReadJsonLines(in);
    return h.ok() ? std::string("ok") : h.status().message();
  };
  EXPECT_EQ(error("\n{\"type\": \"tick\"}\n"), "line 2: unknown event type 'tick'");
  EXPECT_TRUE(error(R"({"type": "read", "client": "c", "revision": 1, "tasks": [{"id": "t", )"
                    R"("state": "sleeping"}]})")
                  .starts_with("line 1: invalid task state 'sleeping' (expected one of new, "));
  EXPECT_EQ(error(R"({"type": "write", "client": "c", "kind": "pod", "id": "p", )"
                  R"("acknowledged": true})"),
            "line 1: invalid object kind 'pod' (expected one of node, service, job)");
  EXPECT_EQ(error("{\"type\": \"final\", \"client\": \"c\", \"revision\": 1}\n"
                  "{\"type\": \"final\", \"client\": \"c\", \"revision\": 2}"),
            "line 2: a second final state");
  EXPECT_TRUE(error("{\"type\": \"read\"").starts_with("line 1: [json.exception.parse_error"));
}

// berthd's answers.

ApiAnswers Answers() {
  ApiAnswers a;
  a.services = Json::parse(R"({"services": [
      {"id": "web", "spec_version": 3, "incarnation": 2,
       "task": {"resources": {"cpu": "500m", "memory": "1Ki"}},
       "previous_task": {"resources": {"cpu": 0.25, "memory": 512}}},
      {"id": "db", "task": {}}]})");
  a.jobs = Json::parse(R"({"jobs": [{"id": "batch", "task": {"resources": {"cpu": 2}}}]})");
  a.nodes = Json::parse(R"({"nodes": [
      {"id": "n1", "resources": {"cpu": 4, "memory": "1Gi"}, "revision": 1},
      {"id": "n2"}]})");
  a.tasks = Json::parse(R"({"tasks": [
      {"id": "batch.1", "job": "batch", "name": "batch.1", "state": "running", "node": "n2"},
      {"id": "db.1.4", "service": "db", "slot": 1, "spec_version": 1, "state": "pending"},
      {"id": "gone.1.1", "service": "gone", "slot": 1, "state": "running", "node": "n1"},
      {"id": "web.1.1", "service": "web", "slot": 1, "spec_version": 1, "state": "running",
       "node": "n1"},
      {"id": "web.1.5", "service": "web", "slot": 1, "spec_version": 2, "state": "shutdown",
       "node": "n1"},
      {"id": "web.1.9", "service": "web", "slot": 1, "spec_version": 3, "desired_state": "running",
       "state": "assigned", "node": "n2", "revision": 9}]})");
  a.revision = 12;
  return a;
}

TEST(ApiSnapshot, TasksReserveTheirVersionsTemplate) {
  Result<Snapshot> s = SnapshotFromApi(Answers(), "c1", 300);
  ASSERT_TRUE(s.ok()) << s.status().message();
  Snapshot expected = Read("c1", 300, 12,
                           {{"batch.1", "", 0, "n2", TaskState::kRunning, {2000, 0}},
                            {"db.1.4", "db", 1, "", TaskState::kPending, {}},
                            // its service was removed: nothing known, nothing counted
                            {"gone.1.1", "gone", 1, "n1", TaskState::kRunning, {}},
                            // serial 1 < incarnation 2: an earlier service named web
                            {"web.1.1", "web", 1, "n1", TaskState::kRunning, {}},
                            {"web.1.5", "web", 1, "n1", TaskState::kShutdown, {250, 512}},
                            {"web.1.9", "web", 1, "n2", TaskState::kAssigned, {500, 1024}}},
                           {{"n1", {4000, int64_t{1} << 30}}, {"n2", {0, 0}}});
  expected.services = {"web", "db"};
  expected.jobs = {"batch"};
  EXPECT_EQ(*s, expected);
  History h;
  h.reads = {*s};  // n2 has no capacity, yet holds batch.1 and web.1.9
  EXPECT_THAT(Check(h), ElementsAre("node 'n2' over capacity in read 0 (client 'c1' at 300 ms, "
                                    "revision 12): its tasks reserve cpu 2500m of 0m (batch.1, "
                                    "web.1.9)",
                                    "node 'n2' over capacity in read 0 (client 'c1' at 300 ms, "
                                    "revision 12): its tasks reserve memory 1024 of 0 bytes "
                                    "(batch.1, web.1.9)"));
}

TEST(ApiSnapshot, MalformedAnswersRefused) {
  ApiAnswers bad_state = Answers();
  bad_state.tasks["tasks"][0]["state"] = "sleeping";
  Result<Snapshot> s = SnapshotFromApi(bad_state, "c1", 0);
  EXPECT_TRUE(s.status().message().starts_with("task batch.1: invalid task state 'sleeping'"))
      << s.status().message();
  ApiAnswers bad_cpu = Answers();
  bad_cpu.nodes["nodes"][0]["resources"]["cpu"] = "lots";
  s = SnapshotFromApi(bad_cpu, "c1", 0);
  EXPECT_TRUE(s.status().message().starts_with("node n1: resources.cpu: ")) << s.status().message();
  ApiAnswers no_list = Answers();
  no_list.nodes = Json::object();
  s = SnapshotFromApi(no_list, "c1", 0);
  EXPECT_TRUE(s.status().message().starts_with("unexpected answer from berthd: ["))
      << s.status().message();
}

}  // namespace
}  // namespace berth::history
