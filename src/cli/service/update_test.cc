// `berth service update` against a berthd: template edits, and what its
// wait reports of a rollout's failed tasks.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, PlacementPreferencesAreAddedAndRemovedByUpdate) {
  ASSERT_EQ(Run({"node", "add", "n1", "--label", "az=a"}).status, 0);
  ASSERT_EQ(Run({"service", "create", "web", "-d", "--placement-pref", "spread=node.labels.az:a=2",
                 "--placement-pref", "prefer=node.labels.disk==ssd"})
                .status,
            0);
  Outcome updated =
      Run({"service", "update", "web", "-d", "--placement-pref-rm", "spread=node.labels.az:a=2",
           "--placement-pref-add", "pack=node.id", "--affinity-add", "service!=web"});
  ASSERT_EQ(updated.status, 0) << updated.err;
  Json task = Json::parse(Run({"service", "inspect", "web", "-o", "json"}).out)["task"];
  EXPECT_EQ(task["preferences"],
            Json::parse(R"([{"prefer": "node.labels.disk==ssd"}, {"pack": "node.id"}])"));
  EXPECT_EQ(task["affinity"], Json::parse(R"([{"service": "web", "anti": true}])"));
  ASSERT_EQ(Run({"service", "update", "web", "-d", "--affinity-rm", "service!=web"}).status, 0);
  task = Json::parse(Run({"service", "inspect", "web", "-o", "json"}).out)["task"];
  EXPECT_FALSE(task.contains("affinity")) << task.dump();
  Outcome missing =
      Run({"service", "update", "web", "-d", "--placement-pref-rm", "spread=node.labels.az"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("the service has no such preference"), std::string::npos)
      << missing.err;
  Outcome refused =
      Run({"service", "create", "bad", "-d", "--placement-pref", "pack=node.hostname"});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find("unsupported descriptor 'node.hostname'"), std::string::npos)
      << refused.err;
}

TEST_F(ClientCommandsTest, UpdateEditsTheProcessFieldsAndSaysWhatCannotChange) {
  ASSERT_EQ(
      Run({"service", "create", "web", "-d", "-e", "A=1", "-e", "B=2", "--", "sleep", "9"}).status,
      0);
  ASSERT_EQ(Run({"service", "update", "web", "-d", "--env-add", "A=3", "--env-rm", "B", "--args",
                 "10  11", "--workdir", "/srv"})
                .status,
            0);
  const Json task = ApiGet("/v1/services/web")["task"];
  EXPECT_EQ(task["env"], Json::array({"A=3"}));
  EXPECT_EQ(task["args"], Json::array({"10", "11"}));
  EXPECT_EQ(task["workdir"], "/srv");
  Outcome nothing = Run({"service", "update", "web", "-d"});
  EXPECT_EQ(nothing.status, 2);
  EXPECT_EQ(nothing.err.substr(0, 26), "berth: nothing to update: ");
  ASSERT_EQ(Run({"service", "create", "sim", "-d"}).status, 0);
  Outcome args = Run({"service", "update", "sim", "-d", "--args", "x"});
  EXPECT_EQ(args.status, 2);
  EXPECT_EQ(args.err, "berth: --args: the service has no command to give arguments to\n");
}

// An update whose tasks fail: the wait printed only its last line. It now
// prints each failed task of the rollout and the start of the rollback.
TEST_F(ClientCommandsTest, UpdateShowsTheFailedTaskAndTheRollbackStart) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(
      Run({"service", "create", "web", "--monitor", "0s", "--update-failure-action", "rollback"})
          .status,
      0);
  // The tasks of the next template fail 200 ms after they start (set
  // through the API: the CLI has no flag for a simulated run on update).
  api::ApiClient api = Api();
  ASSERT_TRUE(api.Call("PATCH", "/v1/services/web", Json::parse(R"({"run": {"duration": 0.2,
                                                                    "outcome": "fail"}})"))
                  .ok());
  Outcome updated = Run({"service", "update", "web", "--force"});
  EXPECT_EQ(updated.status, 1) << updated.out;
  EXPECT_NE(updated.out.find("task web.1 (web.1."), std::string::npos) << updated.out;
  EXPECT_NE(updated.out.find(") failed: failed after "), std::string::npos) << updated.out;
  // The reason berthd gives ("update rolled back due to failure ... of task
  // web.1.N"), or, when the rollback ended between two looks, its end.
  EXPECT_NE(updated.out.find("rollback started: "), std::string::npos) << updated.out;
  EXPECT_NE(updated.err.find("berth: web: "), std::string::npos) << updated.err;
}

// Outside a rollout (a new replica), a failed task ends the wait at once.
TEST_F(ClientCommandsTest, UpdateReportsATaskThatFails) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(
      Run({"service", "create", "crash", "-d", "--run-duration", "0.2", "--run-outcome", "fail"})
          .status,
      0);
  Outcome updated = Run({"service", "update", "crash", "--replicas", "2"});
  EXPECT_EQ(updated.status, 1) << updated.out;
  EXPECT_NE(updated.err.find("berth: crash: task crash."), std::string::npos) << updated.err;
  EXPECT_NE(updated.err.find(") failed: failed after "), std::string::npos) << updated.err;
}

}  // namespace
}  // namespace berth::cli
