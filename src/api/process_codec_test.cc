#include "api/process_codec.h"

#include <gtest/gtest.h>

#include "api/cluster_codec.h"

namespace berth::api {
namespace {

std::optional<executor::ProcessSpec> Decoded(const Json& task) {
  std::optional<executor::ProcessSpec> spec;
  const Status status = DecodeProcessSpec(task, "task", &spec);
  EXPECT_TRUE(status.ok()) << status.message();
  return spec;
}

std::string Refusal(const Json& task) {
  std::optional<executor::ProcessSpec> spec;
  return DecodeProcessSpec(task, "task", &spec).message();
}

TEST(ProcessCodec, ATemplateWithoutACommandHasNoProcess) {
  EXPECT_FALSE(Decoded(Json{{"resources", {{"cpu", 1}}}}).has_value());
}

TEST(ProcessCodec, EveryFieldIsReadAndEncodedBack) {
  const Json task = Json::parse(R"({"command": "sh", "args": ["-c", "echo hi"],
    "env": ["A=1", "B_2=x=y"], "workdir": "/tmp", "stop_grace_period": "1m30s",
    "limits": {"cpu": 0.5, "memory": "64Mi", "pids": 100}})");
  const std::optional<executor::ProcessSpec> spec = Decoded(task);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->command, "sh");
  EXPECT_EQ(spec->args, (std::vector<std::string>{"-c", "echo hi"}));
  EXPECT_EQ(spec->env, (std::vector<std::string>{"A=1", "B_2=x=y"}));
  EXPECT_EQ(spec->workdir, "/tmp");
  EXPECT_EQ(spec->stop_grace_period, Duration{90'000});
  EXPECT_EQ(spec->limit_cpu, 0.5);
  EXPECT_EQ(spec->limit_memory, 64 << 20);
  EXPECT_EQ(spec->limit_pids, 100);
  EXPECT_EQ(Decoded(EncodeProcessSpec(*spec)), spec);
}

TEST(ProcessCodec, TheDefaultGracePeriodIsTenSeconds) {
  EXPECT_EQ(Decoded(Json{{"command", "true"}})->stop_grace_period, Duration{10'000});
}

TEST(ProcessCodec, BadFieldsAreRefusedWithTheirPath) {
  EXPECT_EQ(Refusal(Json{{"args", {"x"}}}), "task.args: needs \"command\" (the program to run)");
  EXPECT_EQ(Refusal(Json{{"command", ""}}), "task.command: must not be empty");
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"env", {"1A=b"}}}),
            "task.env[0]: expected NAME=value with NAME of letters, digits and '_', got the name "
            "'1A'");
  // An env value may be a secret: a refusal never repeats it.
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"env", {"DB_PASSWORD hunter2"}}}),
            "task.env[0]: expected NAME=value, got no '='");
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"workdir", "rel"}}),
            "task.workdir: must be an absolute path, got 'rel'");
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"limits", {{"memory", 0}}}}),
            "task.limits.memory: must be above 0");
  EXPECT_NE(Refusal(Json{{"command", "x"}, {"stop_grace_period", "soon"}}), "");
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"stop_grace_period", "8761h"}}),
            "task.stop_grace_period: must be at most 8760h (a year)");
  EXPECT_NE(Refusal(Json{{"command", std::string("a\0b", 3)}}), "");
}

// A pids limit is a whole number of processes, from 1 to the kernel's
// PID_MAX_LIMIT.
TEST(ProcessCodec, APidsLimitIsAWholeNumberWithinTheKernelsBound) {
  EXPECT_EQ(Decoded(Json{{"command", "x"}, {"limits", {{"pids", 1}}}})->limit_pids, 1);
  EXPECT_EQ(Decoded(Json{{"command", "x"}, {"limits", {{"pids", 4194304}}}})->limit_pids, 4194304);
  const std::string range =
      "task.limits.pids: expected a whole number of processes from 1 to "
      "4194304, got ";
  for (const Json& bad : {Json(0), Json(-5), Json(4194305), Json(1.5), Json(18446744073709551615u)})
    EXPECT_EQ(Refusal(Json{{"command", "x"}, {"limits", {{"pids", bad}}}}), range + bad.dump());
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"limits", {{"pids", "100"}}}}),
            "task.limits.pids: expected a whole number of processes, got string");
  EXPECT_EQ(Refusal(Json{{"command", "x"}, {"limits", {{"threads", 5}}}}).find("task.limits"), 0u);
}

// The placement template takes the process fields, so a service carries them.
TEST(ProcessCodec, ThePlacementTemplateAcceptsAndChecksThem) {
  TaskSpec spec;
  EXPECT_TRUE(DecodeTaskSpec(Json{{"command", "sleep"}, {"args", {"5"}}}, "task", &spec).ok());
  EXPECT_FALSE(DecodeTaskSpec(Json{{"args", {"5"}}}, "task", &spec).ok());
}

// A job's per-task arguments: {{.Index}} only, anything else refused.
TEST(ProcessCodec, IndexTemplatesExpandToTheTaskIndexAndNothingElseExpands) {
  EXPECT_EQ(*ExpandIndex("shard-{{.Index}}/{{ .Index }}", 7), "shard-7/7");
  EXPECT_EQ(*ExpandIndex("no template", 7), "no template");
  EXPECT_EQ(ExpandIndex("{{.Task.Slot}}", 1).status().message(),
            "unknown template '{{.Task.Slot}}' (only {{.Index}} expands)");
  EXPECT_EQ(ExpandIndex("a {{.Index", 1).status().message(),
            "'{{' is not closed by '}}' (only {{.Index}} expands)");
  executor::ProcessSpec spec;
  spec.command = "sh";
  spec.args = {"-c", "echo {{.Index}}"};
  spec.env = {"PART={{.Index}}", "X=={{.Index}}"};
  EXPECT_TRUE(HasIndexTemplate(spec));
  Result<executor::ProcessSpec> expanded = ExpandProcessIndex(spec, "task", 3);
  ASSERT_TRUE(expanded.ok());
  EXPECT_EQ(expanded->args, (std::vector<std::string>{"-c", "echo 3"}));
  EXPECT_EQ(expanded->env, (std::vector<std::string>{"PART=3", "X==3"}));
  spec.env = {"BAD={{.Nope}}"};
  EXPECT_EQ(ExpandProcessIndex(spec, "task", 3).status().message(),
            "task.env[0]: unknown template '{{.Nope}}' (only {{.Index}} expands)");
  spec.args = {"-c", "true"};
  spec.env.clear();
  EXPECT_FALSE(HasIndexTemplate(spec));
}

// A job's per-task command lines: each the program then its arguments, by
// the rules of "command" and "args".
TEST(ProcessCodec, PerTaskCommandLinesAreReadAndCheckedWithTheirPath) {
  std::vector<std::vector<std::string>> commands;
  ASSERT_TRUE(
      DecodeCommands(Json::parse(R"([["make", "shard-1"], ["true"]])"), "commands", &commands)
          .ok());
  EXPECT_EQ(commands, (std::vector<std::vector<std::string>>{{"make", "shard-1"}, {"true"}}));
  auto refusal = [&](const Json& value) {
    return DecodeCommands(value, "commands", &commands).message();
  };
  EXPECT_EQ(refusal(Json::parse(R"([["true"], []])")),
            "commands[1]: must not be empty (the program, then its arguments)");
  EXPECT_EQ(refusal(Json::parse(R"([[""]])")), "commands[0][0]: must not be empty");
  EXPECT_NE(refusal(Json::parse(R"([["sh", 3]])")).find("commands[0][1]"), std::string::npos);
  EXPECT_NE(refusal(Json::parse(R"({"a": 1})")).find("commands"), std::string::npos);
  EXPECT_NE(refusal(Json::array({Json::array({std::string("a\0b", 3)})})), "");
  EXPECT_EQ(refusal(Json::array({std::vector<std::string>(1026, "x")})),
            "commands[0]: more than 1025 entries");
}

TEST(ProcessCodec, WithPerTaskCommandsTheTemplateGivesEverythingButTheCommandLine) {
  executor::ProcessSpec shared;
  ASSERT_TRUE(
      DecodeSharedProcess(Json{{"env", {"A=1"}}, {"workdir", "/tmp"}}, "task", &shared).ok());
  const executor::ProcessSpec spec = WithCommandLine(shared, {"sh", "-c", "echo hi"});
  EXPECT_EQ(spec.command, "sh");
  EXPECT_EQ(spec.args, (std::vector<std::string>{"-c", "echo hi"}));
  EXPECT_EQ(spec.env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(spec.workdir, "/tmp");
  EXPECT_EQ(DecodeSharedProcess(Json{{"command", "sh"}}, "task", &shared).message(),
            "task.command: not with \"commands\" (each task's program and arguments are its "
            "entry of \"commands\")");
  EXPECT_NE(DecodeSharedProcess(Json{{"args", {"x"}}}, "task", &shared).message(), "");
  EXPECT_EQ(DecodeSharedProcess(Json{{"workdir", "rel"}}, "task", &shared).message(),
            "task.workdir: must be an absolute path, got 'rel'");
  EXPECT_EQ(WithoutProcessFields(Json{{"env", {"A=1"}}, {"resources", {{"cpu", 1}}}}),
            (Json{{"resources", {{"cpu", 1}}}}));
}

}  // namespace
}  // namespace berth::api
