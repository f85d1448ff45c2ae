// JobParts: how a job's tasks are stored, shared by the registry (which
// writes them), the task views and the control loop (which read them).
//
// A job record (kind "job") holds what its tasks share: requestor, template,
// task count, and "submission", a random name of the request that stored
// it. What differs per task (its entry of the request's "tasks", and its
// command line when the job has per-task "commands") is stored in parts:
// objects of kind "job_tasks", id "<job>/<submission>/<first index, 10
// digits>", body {"tasks": [entry...], "commands"?: [[program, arg...]...]},
// each about kPartBytes at most. A task has a record of its own (kind
// "task") only once the control loop admits it; until then it is a task in
// state new, "waiting for admission" (or, once its job is killed, shutdown),
// which the views and the loop derive from its part (UnrecordedTaskBody).
//
// Why: a job of 100,000 tasks is then a few objects of a few hundred
// kilobytes, which etcd takes in a handful of transactions (it takes at most
// 128 writes in one), instead of 100,000 keys; SQLite stores the same.
//
// Atomicity: parts are read only through a job record naming their
// submission, which is the last write of a submission (or in the same commit
// as its parts, when all fit in one; etcd then hands out the parts after
// the record, which the loop allows for). A submission whose record is
// refused deletes the parts it wrote; one cut short by a crash, or whose
// record's outcome stays unknown, leaves parts that no job names, which
// nothing reads.
//
// Pure functions but ListTaskRecords and GetTaskRecord, which read a store
// (thread-safe, as the store is).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

inline constexpr char kJobTasksKind[] = "job_tasks";
// A part's body stays near this size: large enough that a 100,000-task job
// is a few dozen parts, small enough that several fit in one etcd
// transaction (--max-request-bytes, 1.5 MiB by default).
inline constexpr size_t kPartBytes = 128 << 10;

// A random name for one submission (16 hex digits).
std::string NewSubmission();
// A stored job's "submission", or null (a job stored with a record per
// task, or a body that is not a job's).
const std::string* SubmissionOf(const api::Json& job);
// "<job>/<submission>/": the ids of a submission's parts start so.
std::string PartsPrefix(std::string_view job, std::string_view submission);

// The parts of a job's tasks: `tasks` is the request's (checked) "tasks"
// array, `commands` its "commands" or null. Puts, in index order.
std::vector<store::Write> EncodeParts(std::string_view job, std::string_view submission,
                                      const api::Json& tasks, const api::Json* commands);

// Calls `each(index, entry, command)` for every task of the parts (ordered
// by id, as a store lists them), index from 1; `command` is null when the
// job has no per-task commands. Internal if a part does not decode.
using PartTask =
    std::function<void(int64_t index, const api::Json& entry, const api::Json* command)>;
Status ForEachPartTask(const std::vector<store::StoredObject>& parts, const PartTask& each);

// The body of task "<job>.<index>" of `job` (its stored record's body)
// while the task has no record of its own: as the registry wrote it when a
// job's tasks were all records (new, waiting for admission), or shutdown
// once the job is killed. `entry`: the task's entry of the request.
api::Json UnrecordedTaskBody(const std::string& job_id, const api::Json& job, int64_t index,
                             const api::Json& entry);

// The per-task "commands" of job `job_id` as submitted (an array, one line
// per task), read from the parts of its `submission`.
Result<api::Json> ReadCommands(const store::Store& store, std::string_view job_id,
                               std::string_view submission);

// The task records of `owner` (a job or service id; "": every task),
// ordered by id: the stored ones, and a job's tasks without a record as
// UnrecordedTaskBody gives them (revision: the job's).
Result<std::vector<store::StoredObject>> ListTaskRecords(const store::Store& store,
                                                         std::string_view owner);
// Task `id`'s record, stored or (a job's task without one) derived.
Result<std::optional<store::StoredObject>> GetTaskRecord(const store::Store& store,
                                                         std::string_view id);

}  // namespace berth::daemon
