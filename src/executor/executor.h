// Executor: runs the tasks the control loop placed (docs/architecture.md,
// "src/executor"), behind one interface so the loop does not know how. The
// simulated executor (simulated_executor.h) times simulated tasks; on
// berth-node machines the process executor (process_executor.h) runs them
// as processes, and berthd hands them over through its NodeExecutor
// (daemon/nodes/node_executor.h).
//
// The loop calls Start for a task that became assigned (again in the first
// pass after TakeChanged named it, while Start said it had not started
// yet), and Check for a running task in the pass after it started, once
// the `due` time Check gave has passed (so a pass runs then without any
// change, ControlLoop's timer), and in the first pass after TakeChanged
// named it, with the injected clock's time; an executor says when a
// running task ended. The loop does not ask about running tasks otherwise: a pass costs
// what changed. Stop tells it that the loop stopped a task (removed,
// replaced, scaled down, its node gone).
//
// What an executor keeps between calls is its own business: the simulated
// one keeps nothing, since a task's start time and run are stored with it,
// so it carries on after a restart of berthd.
//
// Called from the control loop's thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"
#include "executor/process_spec.h"

namespace berth::executor {

// How the simulated executor runs a task: for `duration_ms`, then complete
// or failed. Stored with the task (a job's) or its service ("run").
struct SimulatedRun {
  int64_t duration_ms = 0;
  bool fail = false;  // outcome "fail" rather than "complete"
  bool operator==(const SimulatedRun&) const = default;
};

// What an executor is told of a task.
struct TaskToRun {
  const std::string& id;
  const std::string& node;
  // How the simulated executor runs it (a job's task, or a service with a
  // "run"); none: it runs until stopped.
  const std::optional<SimulatedRun>& run;
  std::optional<Timestamp> started_at;  // set once it runs
  // How a berth-node machine runs it as a process; null: the template gives
  // no command (only the simulated executor runs such a task).
  const ProcessSpec* process = nullptr;
  // The cluster agent it is bound on (three-phase placement, berthd
  // --agent); empty: one of berthd's own nodes.
  std::string_view agent = {};
};

// A task that ended by itself.
struct Ended {
  bool failed = false;
  int64_t ran_ms = 0;     // from its start to its end
  std::string message;    // the task's status message, e.g. "completed after 30000 ms (simulated)"
  bool rejected = false;  // it never started (no such program, say): failed too
};

class Executor {
 public:
  virtual ~Executor() = default;
  // The task was assigned at `now`: start it. Returns its status message
  // as running, or nullopt while it is not running yet (the task stays
  // assigned; the executor names it in TakeChanged once it knows more).
  virtual std::optional<std::string> Start(const TaskToRun& task, Timestamp now) = 0;
  // Whether the running task has ended by `now`; if it runs on, `*due` is
  // when it may end (left alone when the executor cannot know).
  virtual std::optional<Ended> Check(const TaskToRun& task, Timestamp now,
                                     std::optional<Timestamp>* due) = 0;
  // The loop stopped the task; an executor that runs it stops it.
  virtual void Stop(const TaskToRun& task) = 0;
  // Whether the run `id` that the loop stopped may still run: its stop went
  // to a machine that has not yet said it ended. If so, that end names
  // `waiter` in TakeChanged. An executor that stops its runs at once (the
  // simulated one) says false.
  virtual bool Stopping(const std::string& /*id*/, const std::string& /*waiter*/) { return false; }
  // The ids of running tasks the executor learnt something of by itself
  // since the last call (a process exited), for the loop to Check in its
  // next pass; an executor that only times its tasks (the simulated one)
  // has none. The loop calls it at the start of every pass.
  virtual std::vector<std::string> TakeChanged() { return {}; }
  // The pass's store commit succeeded at `revision` (the store's revision
  // when the pass wrote nothing), or failed: an executor that tells other
  // machines what to run does so only after the commit, since a failed
  // pass is run again from the store.
  virtual void Committed(int64_t /*revision*/) {}
  virtual void Discarded() {}
};

}  // namespace berth::executor
