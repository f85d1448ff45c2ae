// History: deletes the ended tasks of services beyond the history limit
// (ReconcilerOptions::task_history_limit, as Docker's
// --task-history-limit). Ended tasks are grouped by where their history is
// kept (TaskHistory): a replicated service keeps `limit` per slot, a global
// service `limit` per node, a removed service none; the most recently
// written are kept. Only groups that grew or whose service changed are
// looked at. Tasks written by this pass join their group after its commit
// (they are the newest), and jobs' tasks stay until their job goes. The
// last step before the commit.
#pragma once

#include <cstdint>

#include "daemon/loop/pass.h"
#include "daemon/loop/task_history.h"

namespace berth::daemon {

class History {
 public:
  History(Pass& pass, TaskHistory& history) : pass_(pass), history_(history) {}
  // Negative `limit`: keeps them all.
  void Prune(int64_t limit);

 private:
  Pass& pass_;
  TaskHistory& history_;
};

}  // namespace berth::daemon
