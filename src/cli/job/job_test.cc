// `berth job` and `berth class` against a berthd: jobs admitted by the
// classes set from the command line.
#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST_F(ClientCommandsTest, JobsAreAdmittedByTheClassesSetFromTheCommandLine) {
  for (const char* node : {"n1", "n2"})
    ASSERT_EQ(Run({"node", "add", node, "--cpu", "4"}).status, 0);
  Outcome set = Run({"class", "set", "--percents", "land=50,diff=50", "--requestor", "^land=land",
                     "--requestor", "^diff=diff"});
  ASSERT_EQ(set.status, 0) << set.err;
  ASSERT_EQ(
      Run({"job", "submit", "a", "--requestor", "land-ci", "--tasks", "3", "--duration", "600"})
          .status,
      0);
  ASSERT_EQ(
      Run({"job", "submit", "b", "--requestor", "diff-ci", "--tasks", "3", "--duration", "600"})
          .status,
      0);
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  // Two workers (one slot per node), split evenly between the classes.
  Outcome a = Run({"job", "inspect", "a", "-o", "json"});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(Json::parse(a.out)["states"], (Json{{"new", 2}, {"running", 1}}));
  Outcome killed = Run({"job", "kill", "b"});
  EXPECT_EQ(killed.status, 0) << killed.err;
  ASSERT_TRUE(daemon_->WaitSettled(std::chrono::seconds(20)));
  EXPECT_EQ(Json::parse(Run({"job", "inspect", "a", "-o", "json"}).out)["states"],
            (Json{{"new", 1}, {"running", 2}}));  // b's worker went to a
  Outcome bad = Run({"class", "set", "--percents", "x=-1"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "berth: classes: class 'x' has a negative load percent (-1)\n");
  EXPECT_NE(Run({"class", "get"}).out.find("land   50"), std::string::npos);
}

TEST_F(ClientCommandsTest, JobSubmitTakesTheTemplateFlags) {
  Outcome bad = Run({"job", "submit", "j", "--requestor", "r", "--duration", "soon"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "berth: --duration 'soon': expected seconds\n");
  Outcome submitted = Run({"job", "submit", "j", "--requestor", "r", "--tasks", "2",
                           "--reserve-cpu", "0.5", "--constraint", "node.labels.az==a"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(submitted.out.substr(0, submitted.out.find('\n')),
            "ID  REQUESTOR  TASKS  STATUS  TASK STATES");
  const Json job = ApiGet("/v1/jobs/j");
  EXPECT_EQ(job["task"], Json::parse(R"({"resources": {"cpu": "0.5"},
                                         "constraints": ["node.labels.az==a"]})"));
}

}  // namespace
}  // namespace berth::cli
