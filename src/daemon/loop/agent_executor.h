// AgentExecutor: berthd's Executor for the tasks it placed through
// berth-agents that front berth-node machines (docs/agent.md, "The agent's
// node fleet"). Such an agent runs what it binds; this learns how each run
// goes from the agent's runs feed (AgentTransport::Runs, a long poll on a
// thread per agent) and tells the control loop as NodeExecutor does: a task
// stays assigned until its agent says it runs, and ends as the agent says.
// Stopping a task is its binding's release (AgentPlacement), which the
// agent turns into a stop on its node.
// Every other task goes to `inner`: those on berthd's own nodes, those
// without a command, and those bound on an agent whose nodes are simulated
// (its feed answers NotFound; until an agent's first answer its tasks wait).
//
// Thread-safety: the Executor methods from the control loop's thread; the
// pollers from their own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "executor/executor.h"
#include "threephase/transport.h"

namespace berth::daemon {

class AgentExecutor final : public executor::Executor {
 public:
  // None of the references is owned. `wake_loop` runs on a poller's thread
  // when runs changed.
  AgentExecutor(executor::Executor& inner, std::vector<threephase::AgentTransport*> agents,
                std::function<void()> wake_loop);
  ~AgentExecutor() override { Stop(); }

  void Start();  // the pollers
  void Stop();

  std::optional<std::string> Start(const executor::TaskToRun& task, Timestamp now) override;
  std::optional<executor::Ended> Check(const executor::TaskToRun& task, Timestamp now,
                                       std::optional<Timestamp>* due) override;
  void Stop(const executor::TaskToRun& task) override;
  std::vector<std::string> TakeChanged() override;
  // Of the tasks `inner_` runs; an agent's own nodes are not waited for.
  bool Stopping(const std::string& id, const std::string& waiter) override {
    return inner_.Stopping(id, waiter);
  }
  void Committed(int64_t revision) override { inner_.Committed(revision); }
  void Discarded() override { inner_.Discarded(); }

 private:
  enum class Kind { kUnknown, kFleet, kSimulated };
  struct Feed {
    threephase::AgentTransport* transport = nullptr;
    Kind kind = Kind::kUnknown;
    std::vector<std::string> waiting;  // runs asked of before the kind was known
  };

  // The feed of the agent that runs `task`, or null when `inner_` runs it.
  // Under mu_.
  Feed* FeedOf(const executor::TaskToRun& task);
  void Poll(Feed& feed);
  void Learn(Feed& feed, Kind kind, std::vector<agent::RunReport> runs);

  executor::Executor& inner_;
  std::function<void()> wake_loop_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::unordered_map<std::string, Feed> feeds_;             // by agent id
  std::unordered_map<std::string, agent::RunReport> runs_;  // by run id
  std::vector<std::string> changed_;
  std::vector<std::thread> pollers_;
};

}  // namespace berth::daemon
