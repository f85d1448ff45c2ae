// LoopCounts: what the views (`service ls`, `node ls`, a node's use, the
// dashboard's snapshot, the gauges of /metrics) need to know about the
// tasks, kept by the control loop task by task so that no view reads the
// tasks (docs/api.md, "Snapshot").
//
// StoredState calls Count after every edit of a task (its Recount) and
// Uncount before it drops one; each TaskEntry remembers what it added
// (TaskEntry::counted), so a count never drifts from the tasks, whatever
// changed in between (a service's new template, a removed node).
//
// Publish hands the views an immutable CountsSnapshot. Rows live in
// copy-on-write chunks (CowTable): publishing copies one pointer per chunk,
// and the first edit of a chunk after a publish copies that chunk, so a pass
// costs what it changed, not the cluster, and a reader never waits for the
// loop.
//
// Not thread-safe (the control loop owns it); a CountsSnapshot is
// immutable and safe from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/node.h"
#include "core/resources.h"
#include "core/task.h"
#include "orchestrator/template_versions.h"

namespace berth::daemon {

inline constexpr size_t kTaskStates = static_cast<size_t>(TaskState::kOrphaned) + 1;

// Why a task waits for a node (state new or pending), from what the loop
// said of it: a class of reasons, for a gauge and the dashboard.
enum class PendingReason : uint8_t {
  kScheduling,      // not tried by the engine yet
  kNoSuitableNode,  // the engine's filters left no node ("no suitable node (...)")
  kRestartDelay,    // the restart policy's delay
  kAdmission,       // a job's task waiting for its fair-share class
  kAgent,           // no cluster agent could place it
};
inline constexpr size_t kPendingReasons = static_cast<size_t>(PendingReason::kAgent) + 1;
std::string_view ToString(PendingReason reason);

// Rows of one kind in chunks shared with the snapshots published so far.
// A row is addressed by its ordinal, which stays put while the row is used.
template <class Row>
class CowTable {
 public:
  static constexpr uint32_t kChunkRows = 256;
  using Chunk = std::vector<Row>;
  using Chunks = std::vector<std::shared_ptr<const Chunk>>;

  const Row& operator[](uint32_t i) const { return (*chunks_[i / kChunkRows])[i % kChunkRows]; }
  // Row `i` for writing: its chunk is copied first if a snapshot shares it.
  Row& Edit(uint32_t i);
  uint32_t Add();         // a cleared row's ordinal
  void Free(uint32_t i);  // clears row `i` and lets Add reuse it
  // Every chunk as it is now; later edits copy the chunks they touch.
  std::shared_ptr<const Chunks> Publish();

 private:
  std::vector<std::shared_ptr<Chunk>> chunks_;
  std::vector<bool> shared_;  // by chunk: a published snapshot holds it
  std::vector<uint32_t> free_;
  uint32_t spare_ = 0;                       // rows of the last chunk never used
  std::shared_ptr<const Chunks> published_;  // null: edited since
};

// Tasks of one owner (a service or a job), or of all: by state.
using StateCounts = std::array<uint64_t, kTaskStates>;

struct NodeRow {
  std::string id;  // "": a free row
  // The node is stored (its row outlives it while tasks still count there).
  bool stored = false;
  std::shared_ptr<const Node> node;  // as stored; null while not stored
  std::string error;                 // why its stored body is not a valid node
  // Placed tasks that hold their reservations (assigned to running, not
  // ended): how many, what their templates reserve, and how many per owner
  // (a service, or a job: `job`).
  uint32_t tasks = 0;
  int64_t milli_cpu = 0, memory_bytes = 0;
  std::vector<GenericRequest> generic;
  struct Owner {
    std::string id;
    bool job = false;
    uint32_t tasks = 0;
  };
  std::vector<Owner> owners;
};

// A service or a job.
struct OwnerRow {
  std::string id;
  bool stored = false;
  bool job = false;
  uint32_t counted = 0;
  // A service: its replicas (nullopt: global), spec and template version;
  // its rollout's state and message ("": none). A job: its requestor and
  // task count, and whether it was killed.
  std::optional<uint64_t> replicas;
  uint64_t spec_version = 0;
  orchestrator::TemplateVersions templates;
  std::string rollout_state, rollout_message;
  std::string requestor;
  int64_t job_tasks = 0;
  bool killed = false;
  StateCounts by_state{};
  uint64_t runnable = 0;  // tasks that fill a slot (a global service's: its nodes)
  // Running tasks still meant to run, by spec version (a service's
  // "running" counts those of versions that run its current template).
  std::vector<std::pair<uint64_t, uint64_t>> running_by_version;
  std::array<uint64_t, kPendingReasons> pending_by_reason{};
  std::string pending_message;  // the reason the latest waiting task was given

  uint64_t RunningCurrent() const;
  uint64_t Waiting() const;  // tasks waiting for a node, whatever the reason
};

// What a task added to the counts (TaskEntry::counted).
struct CountedAs {
  static constexpr uint32_t kNone = UINT32_MAX;
  bool in = false;                       // it counts
  uint32_t owner = kNone, node = kNone;  // rows (node: only while it holds reservations)
  TaskState state = TaskState::kNew;
  int8_t reason = -1;    // PendingReason, -1: not waiting
  bool running = false;  // in running_by_version
  bool runnable = false;
  uint64_t version = 0;
  std::shared_ptr<const TaskSpec> spec;  // its reservations are what it added to `node`

  bool operator==(const CountedAs&) const = default;
};

// The counts as of a store revision.
struct CountsSnapshot {
  int64_t revision = 0;
  StateCounts tasks_by_state{};
  std::array<uint64_t, kPendingReasons> pending_by_reason{};
  std::shared_ptr<const CowTable<NodeRow>::Chunks> nodes;
  std::shared_ptr<const CowTable<OwnerRow>::Chunks> owners;  // services and jobs
  std::string admission;  // the admission status's JSON text ("": none yet)

  template <class F>
  void ForEachNode(F&& f) const {
    for (const auto& chunk : *nodes)
      for (const NodeRow& row : *chunk)
        if (row.stored) f(row);
  }
  template <class F>
  void ForEachOwner(F&& f) const {
    for (const auto& chunk : *owners)
      for (const OwnerRow& row : *chunk)
        if (row.stored) f(row);
  }
  const NodeRow* FindNode(std::string_view id) const;      // a linear scan
  const OwnerRow* FindService(std::string_view id) const;  // a linear scan
};

// Whether a task in `state` on `node` holds its template's reservations
// there: placed, from assigned to running.
inline bool HoldsReservations(TaskState state, std::string_view node) {
  return !node.empty() && state >= TaskState::kAssigned && state <= TaskState::kRunning;
}

// A task as the counts see it.
struct CountedTask {
  std::string_view service, job, node, message;
  TaskState state = TaskState::kNew, desired = TaskState::kRunning;
  uint64_t version = 0;
  bool runnable = false;
  bool has_restart_delay = false;
  bool waiting_admission = false;
  std::shared_ptr<const TaskSpec> spec;  // its template; null: reserves nothing
};

class LoopCounts {
 public:
  void PutNode(const std::string& id, std::shared_ptr<const Node> node, std::string error);
  void RemoveNode(const std::string& id);
  struct ServiceFields {
    std::optional<uint64_t> replicas;
    uint64_t spec_version = 0;
    orchestrator::TemplateVersions templates;
  };
  void PutService(const std::string& id, const ServiceFields& fields);
  void RemoveService(const std::string& id);
  void SetRollout(const std::string& service, const std::string& state, const std::string& message);
  void PutJob(const std::string& id, const std::string& requestor, int64_t tasks, bool killed);
  void RemoveJob(const std::string& id);

  // `counted` follows `task`: what it added leaves, what it adds now comes in.
  void Count(const CountedTask& task, CountedAs& counted);
  void Uncount(CountedAs& counted);

  std::shared_ptr<const CountsSnapshot> Publish(int64_t revision, const std::string& admission);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Index = std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>>;

  uint32_t NodeRowOf(std::string_view id);
  uint32_t OwnerRowOf(std::string_view id, bool job);
  // Frees a row nothing refers to any more (not stored, no task counted).
  void ReleaseNodeIfUnused(uint32_t row);
  void ReleaseOwnerIfUnused(uint32_t row);
  // What `c` counts, added (sign 1) or taken away (-1); its node's part
  // only `with_node`.
  void Add(const CountedAs& c, int sign, bool with_node);
  void Remove(const CountedAs& c, bool with_node);  // Add(-1), then frees unused rows
  void AddToNode(const CountedAs& c, int sign);

  CowTable<NodeRow> nodes_;
  CowTable<OwnerRow> owners_;
  Index node_rows_, service_rows_, job_rows_;
  StateCounts tasks_by_state_{};
  std::array<uint64_t, kPendingReasons> pending_by_reason_{};
};

}  // namespace berth::daemon
