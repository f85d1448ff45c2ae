#include "history/history.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

namespace berth::history {
namespace {

constexpr std::array<std::string_view, 3> kKindNames = {"node", "service", "job"};
// A node's message lists at most this many of its tasks: enough to find
// them, short enough to read when a node holds hundreds.
constexpr size_t kTasksNamed = 10;

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// Every snapshot in check order: the reads, then the final state.
std::vector<const Snapshot*> Seen(const History& history) {
  std::vector<const Snapshot*> seen;
  for (const Snapshot& read : history.reads) seen.push_back(&read);
  if (history.final_state) seen.push_back(&*history.final_state);
  return seen;
}

// "read 3 (client 'c1' at 1100 ms, revision 35)": index `i` of Seen().
std::string Where(const History& history, size_t i) {
  const bool final = i == history.reads.size();
  const Snapshot& s = final ? *history.final_state : history.reads[i];
  return (final ? std::string("the final state") : "read " + std::to_string(i)) + " (client " +
         Quoted(s.client) + " at " + std::to_string(s.time_ms) + " ms, revision " +
         std::to_string(s.revision) + ")";
}

std::string Named(const Write& w) { return std::string(ToString(w.kind)) + " " + Quoted(w.id); }
std::string By(const Write& w) {
  return "client " + Quoted(w.client) + " at " + std::to_string(w.time_ms) + " ms";
}

size_t Count(const Snapshot& s, ObjectKind kind, const std::string& id) {
  switch (kind) {
    case ObjectKind::kNode:
      return std::count_if(s.nodes.begin(), s.nodes.end(),
                           [&](const ObservedNode& n) { return n.id == id; });
    case ObjectKind::kService:
      return std::count(s.services.begin(), s.services.end(), id);
    case ObjectKind::kJob:
      return std::count(s.jobs.begin(), s.jobs.end(), id);
  }
  return 0;
}

// Rule 1. An id acknowledged twice means two replicas each accepted it as
// new: one of those acknowledged writes cannot be "present once".
void CheckWrites(const History& history, std::vector<std::string>& out) {
  std::map<std::pair<ObjectKind, std::string>, const Write*> acknowledged;
  std::vector<const Write*> to_find;
  for (const Write& w : history.writes) {
    if (!w.acknowledged) continue;
    auto [first, added] = acknowledged.try_emplace({w.kind, w.id}, &w);
    if (added)
      to_find.push_back(&w);
    else
      out.push_back(Named(w) + " was acknowledged as created twice: to " + By(*first->second) +
                    " and to " + By(w));
  }
  if (to_find.empty()) return;
  if (!history.final_state) {
    out.push_back("no final state recorded: " + std::to_string(to_find.size()) +
                  " acknowledged writes cannot be checked");
    return;
  }
  const std::string final = Where(history, history.reads.size());
  for (const Write* w : to_find) {
    const size_t count = Count(*history.final_state, w->kind, w->id);
    if (count == 0)
      out.push_back("lost write: " + Named(*w) + ", acknowledged to " + By(*w) +
                    ", is absent from " + final);
    else if (count > 1)
      out.push_back(Named(*w) + ", acknowledged to " + By(*w) + ", appears " +
                    std::to_string(count) + " times in " + final);
  }
}

// Rule 2: each further node a task is seen on is reported once, against
// the first node it was seen on.
void CheckBindings(const History& history, std::vector<std::string>& out) {
  struct Binding {
    std::string_view node;
    size_t seen_at;
  };
  std::unordered_map<std::string_view, Binding> first;
  std::set<std::pair<std::string_view, std::string_view>> reported;
  const std::vector<const Snapshot*> seen = Seen(history);
  for (size_t i = 0; i < seen.size(); ++i)
    for (const ObservedTask& t : seen[i]->tasks) {
      if (t.node.empty()) continue;
      auto [bound, added] = first.try_emplace(t.id, Binding{t.node, i});
      if (added || bound->second.node == t.node || !reported.emplace(t.id, t.node).second) continue;
      out.push_back("task " + Quoted(t.id) + " bound to two nodes: " + Quoted(bound->second.node) +
                    " in " + Where(history, bound->second.seen_at) + " and " + Quoted(t.node) +
                    " in " + Where(history, i));
    }
}

std::string TaskList(const std::vector<std::string_view>& ids) {
  std::string list;
  for (size_t i = 0; i < ids.size() && i < kTasksNamed; ++i)
    list += (i == 0 ? "" : ", ") + std::string(ids[i]);
  if (ids.size() > kTasksNamed)
    list += " and " + std::to_string(ids.size() - kTasksNamed) + " more";
  return list;
}

// Rule 3 for snapshot `i` of Seen().
void CheckCapacity(const History& history, const Snapshot& s, size_t i,
                   std::vector<std::string>& out) {
  struct Load {
    Resources reserved;
    std::vector<std::string_view> tasks;
  };
  std::unordered_map<std::string_view, Load> loads;
  for (const ObservedTask& t : s.tasks) {
    if (t.node.empty() || !HoldsResources(t.state)) continue;
    Load& load = loads[t.node];
    load.reserved.milli_cpu += t.reservations.milli_cpu;
    load.reserved.memory_bytes += t.reservations.memory_bytes;
    load.tasks.push_back(t.id);
  }
  for (const ObservedNode& n : s.nodes) {
    auto load = loads.find(n.id);
    if (load == loads.end()) continue;
    const Resources& r = load->second.reserved;
    const std::string head =
        "node " + Quoted(n.id) + " over capacity in " + Where(history, i) + ": its tasks reserve ";
    const std::string tail = " (" + TaskList(load->second.tasks) + ")";
    if (r.milli_cpu > n.capacity.milli_cpu)
      out.push_back(head + "cpu " + std::to_string(r.milli_cpu) + "m of " +
                    std::to_string(n.capacity.milli_cpu) + "m" + tail);
    if (r.memory_bytes > n.capacity.memory_bytes)
      out.push_back(head + "memory " + std::to_string(r.memory_bytes) + " of " +
                    std::to_string(n.capacity.memory_bytes) + " bytes" + tail);
    loads.erase(load);  // a node listed twice is judged once
  }
}

// Rule 4: against the highest revision the client had seen, so 42, 40, 41
// reports both 40 and 41.
void CheckRevisions(const History& history, std::vector<std::string>& out) {
  std::unordered_map<std::string_view, size_t> highest;  // client -> index in Seen()
  const std::vector<const Snapshot*> seen = Seen(history);
  for (size_t i = 0; i < seen.size(); ++i) {
    auto [top, added] = highest.try_emplace(seen[i]->client, i);
    if (added) continue;
    if (seen[i]->revision >= seen[top->second]->revision)
      top->second = i;
    else
      out.push_back("revision went backwards for client " + Quoted(seen[i]->client) + ": " +
                    Where(history, i) + " after " + Where(history, top->second));
  }
}

}  // namespace

std::string_view ToString(ObjectKind kind) { return kKindNames[static_cast<size_t>(kind)]; }

Result<ObjectKind> ParseObjectKind(std::string_view text) {
  for (size_t i = 0; i < kKindNames.size(); ++i)
    if (kKindNames[i] == text) return static_cast<ObjectKind>(i);
  return Status::InvalidArgument("invalid object kind " + Quoted(text) +
                                 " (expected one of node, service, job)");
}

std::vector<std::string> Check(const History& history) {
  std::vector<std::string> violations;
  CheckWrites(history, violations);
  CheckBindings(history, violations);
  const std::vector<const Snapshot*> seen = Seen(history);
  for (size_t i = 0; i < seen.size(); ++i) CheckCapacity(history, *seen[i], i, violations);
  CheckRevisions(history, violations);
  return violations;
}

}  // namespace berth::history
