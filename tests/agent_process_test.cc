// Scheduler instances reaching berth-agent processes over HTTP: placements
// go on when one agent is killed mid-run, the tasks it had not confirmed are
// placed elsewhere, and every task ends exactly once.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "api/http_agent_transport.h"
#include "process.h"
#include "store/test_dir.h"
#include "threephase/scheduler_instance.h"

namespace berth {
namespace {

using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;

class Agent {
 public:
  Agent(const std::string& id, int nodes, const std::string& data_dir)
      : process_({BERTH_AGENT_BINARY, "--id", id, "--simulate", std::to_string(nodes), "--port",
                  "0", "--data-dir", data_dir}) {
    const std::string port =
        PortInLine(process_.WaitForLine("listening on", std::chrono::seconds(30)));
    if (!port.empty()) address_ = "127.0.0.1:" + port;
    token_ = FirstLine(data_dir + "/token");
  }
  std::unique_ptr<api::HttpAgentTransport> Connect(const std::string& token) const {
    Result<std::unique_ptr<api::HttpAgentTransport>> t =
        api::HttpAgentTransport::Connect(address_, token);
    return t.ok() ? std::move(*t) : nullptr;
  }
  const std::string& token() const { return token_; }
  void Kill() { process_.Kill(SIGKILL); }

 private:
  Process process_;
  std::string address_, token_;
};

agent::PlacementTask Task(int i) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations = {500, 256LL << 20, {}};
  return {"t" + std::to_string(i), 0, spec, {}};
}

TEST(AgentProcess, AWrongTokenIsRefused) {
  store::TestDir dir;
  Agent agent("a", 10, dir.path() + "/a");
  EXPECT_NE(agent.Connect(agent.token()), nullptr);
  EXPECT_EQ(agent.Connect("wrong"), nullptr);
}

TEST(AgentProcess, PlacementsGoOnWhenAnAgentIsKilled) {
  store::TestDir dir;
  Agent doomed("doomed", 40, dir.path() + "/a"), survivor("survivor", 400, dir.path() + "/b");
  std::unique_ptr<api::HttpAgentTransport> a = doomed.Connect(doomed.token());
  std::unique_ptr<api::HttpAgentTransport> b = survivor.Connect(survivor.token());
  ASSERT_TRUE(a && b);
  std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, int> outcomes;  // task -> outcomes seen
  std::map<std::string, int> bound_on;  // agent -> tasks bound there
  threephase::SchedulerOptions options;
  options.cluster_percent = 100;  // ask both agents every time
  options.node_basis_points = 1000;
  options.request_timeout = std::chrono::milliseconds(500);
  threephase::SchedulerInstance instance({a.get(), b.get()}, options,
                                         [&](const threephase::TaskOutcome& o) {
                                           std::lock_guard lock(mu);
                                           ++outcomes[o.task_id];
                                           if (o.bound) ++bound_on[o.agent_id];
                                           changed.notify_all();
                                         });
  instance.Start();
  constexpr int kTasks = 600;
  for (int i = 0; i < kTasks; ++i) instance.Submit(Task(i));
  {
    // Kill the first agent once it holds some tasks and work is still going on.
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        changed.wait_for(lock, std::chrono::seconds(60), [&] { return bound_on["doomed"] >= 10; }));
  }
  doomed.Kill();
  ASSERT_TRUE(instance.WaitIdle(std::chrono::seconds(120)));
  instance.Stop();
  std::lock_guard lock(mu);
  ASSERT_EQ(outcomes.size(), static_cast<size_t>(kTasks));
  for (const auto& [task, count] : outcomes) EXPECT_EQ(count, 1) << task;
  EXPECT_EQ(bound_on["doomed"] + bound_on["survivor"], kTasks);  // none failed, none lost
  EXPECT_LT(bound_on["doomed"], kTasks / 2);  // it died early; the rest went to the survivor
  EXPECT_GT(instance.counters().sample_errors.load(), 0u);  // the dead agent was noticed
}

}  // namespace
}  // namespace berth
