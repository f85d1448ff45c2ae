// How the verbs that change a service wait for it (docs/cli.md,
// "Waiting"): `service create`, `update`, `rollback`, `rebalance` and
// `scale`, unless --detach.
//
// After each pass of berthd's loop (GET /v1/health?wait=settled) the wait
// reads the service and its tasks. On standard output it prints each
// slot's newest task and the overall progress when they change, a line
// for each task of the change that stops by itself (failed, rejected, or
// complete while its slot restarts it: "task web.2 (web.2.15) failed:
// exit status 1") and one when a rollback starts ("rollback started:
// REASON"); `scale` prints none of these. It ends:
//   0  the service converged (every slot runs the current template, no
//      rollout under way) and stayed so for the monitor period with no
//      task of the change stopping: "verify: service converged";
//   0  some tasks cannot run without another change (pending with the
//      engine's reason, or ended and not restarted): "not converged: ...";
//   1  a task of the change stopped while no rollout was under way (under
//      one, berthd's failure action decides: a rollout that pauses or is
//      rolled back is also 1), --timeout passed before the service
//      converged (the monitor period comes on top), or berthd failed a
//      request; the reason on standard error.
// The tasks of a change are those whose id serial is at least the store
// revision of the change (orchestrator::TaskId: a task's serial is the
// revision its pass started from), so earlier failures do not count.
#pragma once

#include <chrono>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/task_table.h"
#include "cli/verb.h"
#include "core/time.h"

namespace berth::cli {

// -d/--detach, --timeout and --monitor.
struct WaitFlags {
  bool detach = false;
  double timeout_s = 60;
  // How long the tasks must keep running once converged; "" means the
  // service's update_config.monitor (rollback_config's for a rollback), 5s
  // unless set, as Docker's verify does.
  std::string monitor;
  void Add(CLI::App& verb);
  // --monitor's duration (checked when parsed), or nullopt.
  std::optional<Duration> Monitor() const;
};

// A change a verb made to a service.
struct ServiceChange {
  std::string service;
  int64_t revision = 0;   // the store revision of the change (its answer's "revision")
  bool rollback = false;  // the change is a rollback: its start is no news
};

// One service's wait, fed what berthd says after each pass. Pure: the
// caller reads berthd and the clock.
class ServiceWatch {
 public:
  enum class Verdict { kWaiting, kConverged, kCannotConverge, kFailed };
  // `monitor`: --monitor, else the service's own. `progress`: print the
  // slots and overall progress (scale waits without them); on a
  // `terminal`: as a progress bar per slot, redrawn in place, as `docker
  // service create` does (lines otherwise, and when the slots do not fit
  // its height; each bar's line is cut to its width).
  ServiceWatch(ServiceChange change, std::optional<Duration> monitor, bool progress,
               Terminal terminal = {});

  // Judges `service` (GET /v1/services/ID) and `tasks` (GET
  // /v1/tasks?service=ID) read at `now`: progress lines on `out`, the
  // reason of a failure on `err`.
  Verdict Observe(const Json& service, const Json& tasks, std::chrono::steady_clock::time_point now,
                  std::ostream& out, std::ostream& err);
  const std::string& service() const { return change_.service; }
  // Whether the service converged and the monitor period runs.
  bool verifying() const { return converged_at_.has_value(); }

 private:
  // Prints what changed since the last look (slots and overall progress,
  // a rollback's start, tasks that stopped); the tasks that stopped.
  std::vector<std::string> Narrate(const ServiceProgress& progress, const std::string& rollout,
                                   const std::string& why, const Json& tasks, std::ostream& out);
  // The tasks of the change that stopped by themselves since the last
  // look, one line each ("task web.2 (web.2.15) failed: exit status 1").
  std::vector<std::string> NewlyStopped(const Json& tasks);
  // Whether the rollout state `rollout`, seen now, says a rollback began.
  bool RollbackBegan(const std::string& rollout) const;
  // Whether the monitor period has passed since the service converged.
  bool Verified(const Json& service, std::chrono::steady_clock::time_point now, std::ostream& out);

  // Draws the slots' bars and the overall progress over the ones drawn
  // last, if nothing was printed below them since.
  void Redraw(const ServiceProgress& progress, std::ostream& out);

  ServiceChange change_;
  std::optional<Duration> monitor_;
  bool progress_;
  Terminal terminal_;
  size_t drawn_ = 0;                          // lines of bars on the screen just above the cursor
  std::vector<ServiceProgress::Slot> shown_;  // the slots last printed
  uint64_t shown_running_ = 0;                // and the running count printed with them
  std::set<std::string> reported_;            // tasks whose stop was printed
  std::string rollout_state_;                 // update_status.state last seen
  std::optional<std::chrono::steady_clock::time_point> converged_at_;
};

// Unless flags.detach: waits for each service of `changes` as above, all
// at once; the exit status (0 when each ended with 0). `terminal`:
// VerbContext's.
int WaitForServices(api::ApiClient& client, const std::vector<ServiceChange>& changes,
                    const WaitFlags& flags, bool progress, std::ostream& out, std::ostream& err,
                    Terminal terminal = {});

// POST /v1/services/ID/ACTION (rollback, rebalance), prints the id, then
// waits; the exit status.
int PostAndWait(const VerbContext& context, const std::string& id, const char* action,
                const WaitFlags& flags);

}  // namespace berth::cli
