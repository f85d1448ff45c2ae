// End-to-end tests of `berth plan`: runs the built binary on every document
// under tests/plan and examples/plan.
//
// Convention for tests/plan: `NAME.plan.json` or `NAME.plan.yaml` is the
// input; beside it, exactly one of
//   `NAME.out.json`: the run must exit 0 and print exactly that JSON;
//   `NAME.expect.json`: the run must exit 0 and print JSON containing it
//     (every key of an expected object present with a matching value;
//     lists and other values equal), for outputs whose full text the spec
//     does not give;
//   `NAME.err`: the run must exit 2, print nothing on standard output, and
//     print a message containing the file's text. An optional `NAME.args` holds extra arguments, one per line.
// Every example under examples/plan must plan successfully and account for
// each pending task exactly once.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

struct Outcome {
  int status = -1;
  std::string out, err;
};

// Runs `berth plan <file> <extra...>` with stdout and stderr in temp files.
Outcome RunPlan(const fs::path& file, const std::vector<std::string>& extra) {
  const fs::path dir = fs::temp_directory_path();
  const std::string tag = std::to_string(getpid()) + "-" + file.filename().string();
  const fs::path out_path = dir / ("berth-e2e-out-" + tag), err_path = dir / ("berth-e2e-err-" + tag);
  std::vector<std::string> args = {BERTH_BINARY, "plan", file.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  Outcome outcome;
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    outcome.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  }
  posix_spawn_file_actions_destroy(&actions);
  outcome.out = ReadFile(out_path);
  outcome.err = ReadFile(err_path);
  fs::remove(out_path);
  fs::remove(err_path);
  return outcome;
}

// "a.plan.yaml" -> "a"
std::string CaseName(const fs::path& input) {
  std::string name = input.filename().string();
  return name.substr(0, name.find(".plan."));
}

std::vector<fs::path> Inputs(const fs::path& dir, const std::string& marker) {
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(marker) != std::string::npos &&
        (name.ends_with(".json") || name.ends_with(".yaml")))
      inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

std::vector<std::string> ExtraArgs(const fs::path& file) {
  std::vector<std::string> args;
  if (!fs::exists(file)) return args;
  std::istringstream lines(ReadFile(file));
  for (std::string line; std::getline(lines, line);)
    if (!Trim(line).empty()) args.push_back(Trim(line));
  return args;
}

// Whether `actual` contains `expected` (see the file comment).
bool Contains(const nlohmann::json& actual, const nlohmann::json& expected) {
  if (!expected.is_object()) return actual == expected;
  if (!actual.is_object()) return false;
  for (const auto& [key, value] : expected.items())
    if (!actual.contains(key) || !Contains(actual[key], value)) return false;
  return true;
}

TEST(PlanEndToEnd, EveryCaseUnderTestsPlan) {
  const std::vector<fs::path> inputs = Inputs(BERTH_TEST_PLAN_DIR, ".plan.");
  ASSERT_GE(inputs.size(), 5u);
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    const fs::path base = input.parent_path() / CaseName(input);
    const fs::path expected_out = base.string() + ".out.json",
                   expected_part = base.string() + ".expect.json",
                   expected_err = base.string() + ".err";
    ASSERT_EQ(fs::exists(expected_out) + fs::exists(expected_part) + fs::exists(expected_err), 1)
        << "needs exactly one of .out.json, .expect.json and .err";
    Outcome run = RunPlan(input, ExtraArgs(base.string() + ".args"));
    if (!fs::exists(expected_err)) {
      ASSERT_EQ(run.status, 0) << run.err;
      EXPECT_TRUE(run.err.empty()) << run.err;
      nlohmann::json actual = nlohmann::json::parse(run.out, nullptr, false);
      ASSERT_FALSE(actual.is_discarded()) << run.out;
      if (fs::exists(expected_out))
        EXPECT_EQ(actual, nlohmann::json::parse(ReadFile(expected_out))) << run.out;
      else
        EXPECT_TRUE(Contains(actual, nlohmann::json::parse(ReadFile(expected_part)))) << run.out;
    } else {
      EXPECT_EQ(run.status, 2);
      EXPECT_TRUE(run.out.empty()) << run.out;
      const std::string want = Trim(ReadFile(expected_err));
      EXPECT_NE(run.err.find(want), std::string::npos) << "stderr: " << run.err << "\nwant: " << want;
    }
  }
}

TEST(PlanEndToEnd, ExamplesPlanEveryTaskOnce) {
  const std::vector<fs::path> inputs = Inputs(BERTH_EXAMPLES_PLAN_DIR, ".yaml");
  ASSERT_FALSE(inputs.empty());
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    Outcome run = RunPlan(input, {});
    ASSERT_EQ(run.status, 0) << run.err;
    nlohmann::json plan = nlohmann::json::parse(run.out);
    // Placement: every pending task in one list; admission: distinct starts.
    std::vector<std::string> tasks;
    for (const char* list : {"assignments", "pending"})
      for (const auto& entry : plan.value(list, nlohmann::json::array()))
        tasks.push_back(entry["task"].get<std::string>());
    for (const auto& task : plan.value("start_tasks", nlohmann::json::array()))
      tasks.push_back(task.get<std::string>());
    EXPECT_FALSE(tasks.empty()) << run.out;
    std::set<std::string> unique(tasks.begin(), tasks.end());
    EXPECT_EQ(unique.size(), tasks.size()) << "a task appears twice: " << run.out;
  }
}

}  // namespace
