#include "placement/scheduler.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <span>
#include <string_view>
#include <unordered_map>

#include "constraint/constraint.h"
#include "core/ascii.h"
#include "filter/pipeline.h"
#include "placement/node_order.h"

namespace berth::placement {
namespace {

struct Candidate {
  NodeKey key;
  NodeIndex node;
  friend bool operator<(const Candidate& a, const Candidate& b) { return a.key < b.key; }
};

// One node of the tree of heaps. Inner nodes split by a label value; leaves
// hold the best passing nodes of their branch.
struct TreeNode {
  int64_t tasks = 0;                              // active tasks of the service on every node below
  std::map<std::string_view, uint32_t> children;  // label value -> index; byte order
  std::vector<Candidate> leaf;                    // heap while building, then sorted best first
  bool heap_ready = false;                        // leaf has reached its bound and is a max-heap
  bool ordered_once = false;                      // leaf has been sorted for placement before
  uint32_t depth = 0;                             // its level; leaves: the number of levels
};

// A spread or pack level, parsed once per group: which label map, which
// label, and the preference it came from (kind, weights).
struct TreeLevel {
  const Labels Node::*labels = nullptr;  // null: not a label descriptor, every node gets ""
  std::string_view key;
  const PlacementPreference* preference = nullptr;

  static TreeLevel Parse(const PlacementPreference& preference) {
    // Descriptors were validated at submission: node.labels.<K> or engine.labels.<K>,
    // the prefix case-insensitive.
    const std::string_view descriptor = preference.descriptor;
    auto has_prefix = [&](std::string_view prefix) {
      return descriptor.size() > prefix.size() && StartsWithIgnoreCase(descriptor, prefix);
    };
    constexpr std::string_view kNode = "node.labels.", kEngine = "engine.labels.";
    if (has_prefix(kNode)) return {&Node::labels, descriptor.substr(kNode.size()), &preference};
    if (has_prefix(kEngine))
      return {&Node::engine_labels, descriptor.substr(kEngine.size()), &preference};
    return {nullptr, {}, &preference};
  }

  // The node's value of the label; a missing label is the branch "".
  std::string_view ValueFor(const Node& node) const {
    if (labels == nullptr) return {};
    const Labels& map = node.*labels;
    auto it = map.find(key);
    return it == map.end() ? std::string_view{} : std::string_view(it->second);
  }

  bool pack() const { return preference->kind == PlacementPreference::Kind::kPack; }
  bool weighted() const { return !preference->weights.empty() || preference->other_weight != 0; }
  // A branch's weight: its value's, or "*"'s for values not listed and "".
  uint32_t WeightOf(std::string_view value) const {
    const auto& weights = preference->weights;
    auto it = std::lower_bound(weights.begin(), weights.end(), value,
                               [](const auto& w, std::string_view v) { return w.first < v; });
    return it != weights.end() && it->first == value ? it->second : preference->other_weight;
  }
};

}  // namespace

// The state of one scheduling pass: the pipeline loaded with the current
// group's task, the group's tasks still to place, and reusable scratch space.
class Scheduler::Pass {
 public:
  Pass(ClusterState& state, const SchedulerOptions& options, Timestamp now)
      : state_(state), options_(options), now_(now), ranks_(state.Ranks(options.tie_break_seed)) {
    result_.messages = {kAssignedMessage, kConfirmedMessage};
  }

  PassResult Run();

 private:
  void LoadGroup(const TaskRecord& first);
  // Loads the task into the pipeline, with its failure counts at zero.
  void LoadFilters(const TaskRecord& t) {
    pipeline_.SetTask(*t.spec, t.service, filter::Pipeline::Scope::kAll, services_);
  }
  NodeKey KeyOf(NodeIndex node) const { return KeyOf(node, ServiceTasksOn(node)); }
  NodeKey KeyOf(NodeIndex node, uint32_t service_tasks) const;
  // The group's service's active tasks on `node`, without a lookup when the
  // service has none anywhere (a new service).
  uint32_t ServiceTasksOn(NodeIndex node) const {
    return state_.ActiveTasksOfService(service_) == 0 ? 0
                                                      : state_.node(node).ActiveTasksOf(service_);
  }
  void SchedulePreassigned(TaskIndex task);
  void ScheduleGroup(std::span<const TaskIndex> tasks);
  // Runs `schedule` (one group) and records its time in the result.
  template <typename Schedule>
  void Timed(Schedule schedule);
  void ScheduleOneOffRun(std::span<const TaskIndex> tasks);
  bool PlaceOnLeastLoaded();
  NodeKey LoadKeyOf(NodeIndex n) const {
    return NodeKey::Make(0, 0, 0, state_.ActiveTasksOn(n), ranks_[n]);
  }
  void BuildTree(size_t bound);
  int PlaceOnSubtree(uint32_t tree_node, int n);
  int SpreadOverBranches(std::vector<uint32_t> usable, int n);
  int SpreadByWeight(uint32_t tree_node, int n);
  int PackIntoBranches(uint32_t tree_node, int n);
  bool SoftRuleMet(size_t rule, NodeIndex node) const;
  uint32_t AssignedMessage(NodeIndex node);
  int PlaceOnLeaf(TreeNode& leaf, int n);
  int PlaceBestFirst(std::vector<Candidate>& nodes, int n);
  void OrderLeaf(TreeNode& leaf);
  void AssignNext(NodeIndex node);
  void LeaveRestPending(std::string explanation_or_message);
  uint32_t MessageId(std::string message);

  ClusterState& state_;
  const SchedulerOptions& options_;
  Timestamp now_;
  const std::vector<uint32_t>& ranks_;
  filter::Pipeline pipeline_;
  PassResult result_;
  std::unordered_map<std::string, uint32_t> message_ids_;

  // The group being placed.
  ServiceIndex service_ = 0;
  std::vector<TreeLevel> levels_;  // its spread and pack levels
  bool binpack_ = false;           // its leaves order nodes by room left
  // Its soft rules: soft constraints, then soft affinities.
  struct SoftRule {
    std::string name;  // as the assigned message names it
    std::optional<constraint::Constraint> constraint;
    std::optional<ServiceIndex> service;  // an affinity's (absent: held nowhere)
    bool anti = false;
  };
  std::vector<SoftRule> soft_;
  filter::ServiceLookup services_ = [this](std::string_view id) { return state_.FindService(id); };
  std::vector<std::pair<uint32_t, uint32_t>> assigned_messages_;  // miss mask -> message
  std::vector<std::pair<NodeIndex, uint32_t>> faulty_;  // nodes at/over max_failures, sorted
  std::span<const TaskIndex> group_;
  size_t next_task_ = 0;
  std::vector<TreeNode> tree_;
  std::vector<uint8_t> failed_;  // scratch for PlaceOnLeaf

  // PlaceOnLeastLoaded's heap of every node by LoadKeyOf, built on first use.
  std::vector<Candidate> by_load_;
  bool by_load_built_ = false;
  std::vector<Candidate> tried_;  // scratch for PlaceOnLeastLoaded
};

std::string_view ToString(PlacementStrategy strategy) {
  return strategy == PlacementStrategy::kBinpack ? "binpack" : "spread";
}

Result<PlacementStrategy> ParsePlacementStrategy(std::string_view text) {
  if (text == "spread") return PlacementStrategy::kSpread;
  if (text == "binpack") return PlacementStrategy::kBinpack;
  return Status::InvalidArgument("unknown placement strategy '" + std::string(text) +
                                 "' (expected spread or binpack)");
}

Scheduler::Scheduler(ClusterState& state, SchedulerOptions options)
    : state_(state), options_(std::move(options)) {}
Scheduler::~Scheduler() = default;

PassResult Scheduler::SchedulePending(Timestamp now) { return Pass(state_, options_, now).Run(); }

// A group that made no decision was skipped (unchanged), and is not timed.
template <typename Schedule>
void Scheduler::Pass::Timed(Schedule schedule) {
  const size_t decided = result_.decisions.size();
  const auto start = std::chrono::steady_clock::now();
  schedule();
  if (result_.decisions.size() != decided)
    result_.group_durations.push_back(std::chrono::steady_clock::now() - start);
}

PassResult Scheduler::Pass::Run() {
  std::vector<TaskIndex> preassigned, one_off;
  std::vector<std::vector<TaskIndex>> groups;
  std::map<std::pair<ServiceIndex, uint64_t>, size_t> group_of;
  std::pair<ServiceIndex, uint64_t> last_key{};
  size_t last_group = SIZE_MAX;
  const std::vector<TaskIndex> pending = state_.PendingTasks();
  result_.decisions.reserve(pending.size());
  for (TaskIndex i : pending) {
    const TaskRecord& t = state_.task(i);
    if (t.node != kNoNode) {
      preassigned.push_back(i);
    } else if (!t.has_spec_version) {
      one_off.push_back(i);
    } else {
      std::pair key{t.service, t.spec_version};
      if (last_group == SIZE_MAX || key != last_key) {  // replicas usually arrive together
        auto [it, added] = group_of.try_emplace(key, groups.size());
        if (added) groups.emplace_back();
        last_key = key;
        last_group = it->second;
      }
      groups[last_group].push_back(i);
    }
  }
  for (TaskIndex i : preassigned) SchedulePreassigned(i);
  for (const auto& group : groups) Timed([&] { ScheduleGroup(group); });
  for (size_t i = 0; i < one_off.size();) {
    const TaskRecord& first = state_.task(one_off[i]);
    size_t end = i + 1;
    if (options_.fast_paths && first.spec->preferences.empty()) {
      while (end < one_off.size() && state_.task(one_off[end]).service == first.service &&
             state_.task(one_off[end]).spec == first.spec)
        ++end;
      Timed([&] { ScheduleOneOffRun(std::span(one_off).subspan(i, end - i)); });
    } else {
      Timed([&] { ScheduleGroup(std::span(one_off).subspan(i, 1)); });
    }
    i = end;
  }
  return std::move(result_);
}

void Scheduler::Pass::LoadGroup(const TaskRecord& first) {
  service_ = first.service;
  LoadFilters(first);
  const std::vector<PlacementPreference>& preferences = first.spec->preferences;
  levels_.clear();
  for (const PlacementPreference& p : preferences)
    if (!p.IsNodeId()) levels_.push_back(TreeLevel::Parse(p));
  binpack_ = !preferences.empty() && preferences.back().IsNodeId()
                 ? preferences.back().kind == PlacementPreference::Kind::kPack
                 : options_.strategy == PlacementStrategy::kBinpack;
  soft_.clear();
  assigned_messages_.clear();
  // Validated at submission; one that no longer parses is ignored.
  for (const std::string& expression : first.spec->preferred_constraints)
    if (Result<constraint::Constraint> c = constraint::Parse(expression); c.ok())
      soft_.push_back({expression, std::move(*c), std::nullopt, false});
  for (const ServiceAffinity& a : first.spec->affinities)
    if (a.soft)
      soft_.push_back({(a.anti ? "anti-affinity with " : "affinity with ") + a.service,
                       std::nullopt, state_.FindService(a.service), a.anti});
  faulty_.clear();
  Timestamp since = now_ - options_.failure_window;
  for (NodeIndex n : state_.NodesWithFailures(first.service, first.spec_version)) {
    uint32_t count = state_.RecentFailures(n, first.service, first.spec_version, since);
    if (count >= options_.max_failures) faulty_.emplace_back(n, count);
  }
}

NodeKey Scheduler::Pass::KeyOf(NodeIndex n, uint32_t service_tasks) const {
  uint32_t faulty = 0;
  if (!faulty_.empty()) {
    auto it = std::lower_bound(faulty_.begin(), faulty_.end(), std::make_pair(n, uint32_t{0}));
    if (it != faulty_.end() && it->first == n) faulty = it->second;
  }
  uint32_t misses = 0;
  for (size_t rule = 0; rule < soft_.size(); ++rule) misses += !SoftRuleMet(rule, n);
  if (binpack_)
    return NodeKey::Binpack(faulty, misses, RoomLeft(state_.node(n)), service_tasks, ranks_[n]);
  return NodeKey::Make(faulty, misses, service_tasks, state_.ActiveTasksOn(n), ranks_[n]);
}

bool Scheduler::Pass::SoftRuleMet(size_t rule, NodeIndex node) const {
  const SoftRule& r = soft_[rule];
  if (r.constraint) return constraint::Matches(*r.constraint, state_.node(node).node());
  const bool holds = r.service && state_.node(node).ActiveTasksOf(*r.service) > 0;
  return holds != r.anti;
}

// The success message for a task about to go to `node`, naming the soft
// rules the node does not meet (rules past the 32nd share the last bit of
// the mask that caches the messages).
uint32_t Scheduler::Pass::AssignedMessage(NodeIndex node) {
  uint32_t mask = 0;
  for (size_t rule = 0; rule < soft_.size(); ++rule)
    if (!SoftRuleMet(rule, node)) mask |= 1u << std::min<size_t>(rule, 31);
  if (mask == 0) return 0;
  for (const auto& [m, id] : assigned_messages_)
    if (m == mask) return id;
  std::string unmet;
  for (size_t rule = 0; rule < soft_.size(); ++rule)
    if (mask & (1u << std::min<size_t>(rule, 31)))
      unmet += (unmet.empty() ? "" : ", ") + soft_[rule].name;
  const uint32_t id =
      MessageId(std::string(kAssignedMessage) + " (preference not satisfied: " + unmet + ")");
  assigned_messages_.emplace_back(mask, id);
  return id;
}

uint32_t Scheduler::Pass::MessageId(std::string message) {
  auto [it, added] =
      message_ids_.try_emplace(std::move(message), static_cast<uint32_t>(result_.messages.size()));
  if (added) result_.messages.push_back(it->first);
  return it->second;
}

void Scheduler::Pass::AssignNext(NodeIndex node) {
  TaskIndex task = group_[next_task_++];
  const uint32_t message = AssignedMessage(node);  // before the task counts on the node
  state_.Assign(task, node, now_);
  result_.decisions.push_back({task, node, message});
}

// Tasks of the group not placed stay pending with the pipeline's explanation.
// When none of the group was placed, the explanation is the one a later
// pass would give at the same capacity epoch, so its tasks are marked for
// the skip (ScheduleGroup); after a partial placement a fresh look may
// explain differently, so they are not.
void Scheduler::Pass::LeaveRestPending(std::string explanation) {
  if (next_task_ == group_.size()) return;
  const bool none_placed = next_task_ == 0;
  uint32_t message = MessageId(explanation.empty() ? kNoSuitableNodeMessage
                                                   : std::string(kNoSuitableNodeMessage) + " (" +
                                                         explanation + ")");
  for (; next_task_ < group_.size(); ++next_task_) {
    result_.decisions.push_back({group_[next_task_], kNoNode, message});
    if (none_placed) state_.MarkUnplaced(group_[next_task_]);
  }
}

// A preassigned (global service) task: the full pipeline on its one node.
void Scheduler::Pass::SchedulePreassigned(TaskIndex task) {
  const TaskRecord& t = state_.task(task);
  LoadFilters(t);
  NodeIndex node = t.node;
  if (pipeline_.Process(state_.node(node))) {
    state_.Assign(task, node, now_);
    result_.decisions.push_back({task, node, 1});
  } else {
    result_.decisions.push_back({task, kNoNode, MessageId(pipeline_.Explain())});
  }
}

void Scheduler::Pass::ScheduleGroup(std::span<const TaskIndex> tasks) {
  const uint64_t epoch = state_.capacity_epoch();
  if (std::all_of(tasks.begin(), tasks.end(),
                  [&](TaskIndex t) { return state_.task(t).unplaced_at_epoch == epoch; })) {
    result_.unchanged += tasks.size();
    return;
  }
  group_ = tasks;
  next_task_ = 0;
  const TaskRecord& first = state_.task(tasks.front());
  LoadGroup(first);
  if (options_.fast_paths && tasks.size() == 1 && levels_.empty() && !binpack_ && soft_.empty() &&
      faulty_.empty() && state_.ActiveTasksOfService(service_) == 0) {
    if (PlaceOnLeastLoaded()) return;
    LoadFilters(first);  // the scan below counts afresh
  }
  BuildTree(tasks.size());
  PlaceOnSubtree(0, static_cast<int>(tasks.size()));
  LeaveRestPending(pipeline_.Explain());
}

// Visits every node once: its label values pick the branch at each level, each
// level counts the node's active tasks of the service (passing or not), and the
// leaf keeps a max-heap of the `bound` best passing nodes.
void Scheduler::Pass::BuildTree(size_t bound) {
  tree_.assign(1, TreeNode{});
  // A node's NodeInfo is read only for its labels and the filters, so a
  // node whose order key loses to the leaf's worst costs a few cached loads.
  for (NodeIndex n = 0; n < state_.node_count(); ++n) {
    const NodeInfo& info = state_.node(n);
    uint32_t at = 0;
    const uint32_t service_tasks = ServiceTasksOn(n);
    tree_[at].tasks += service_tasks;
    for (const TreeLevel& level : levels_) {
      auto [it, added] = tree_[at].children.try_emplace(level.ValueFor(info.node()),
                                                        static_cast<uint32_t>(tree_.size()));
      if (added) {
        const uint32_t depth = tree_[at].depth + 1;
        tree_.emplace_back().depth = depth;
      }
      at = it->second;
      tree_[at].tasks += service_tasks;
    }
    TreeNode& leaf = tree_[at];
    Candidate c{KeyOf(n, service_tasks), n};
    if (leaf.leaf.size() < bound) {
      if (!pipeline_.Process(info)) continue;
      leaf.leaf.push_back(c);
      if (leaf.leaf.size() == bound) {
        std::make_heap(leaf.leaf.begin(), leaf.leaf.end());
        leaf.heap_ready = true;
      }
    } else if (c < leaf.leaf.front() && pipeline_.Process(info)) {
      std::pop_heap(leaf.leaf.begin(), leaf.leaf.end());
      leaf.leaf.back() = c;
      std::push_heap(leaf.leaf.begin(), leaf.leaf.end());
    }
  }
}

// Places n tasks below tree node `index` by its level's kind: spread
// (weighted or not) or pack; a leaf places them on its nodes.
int Scheduler::Pass::PlaceOnSubtree(uint32_t index, int n) {
  if (tree_[index].children.empty()) return PlaceOnLeaf(tree_[index], n);
  const TreeLevel& level = levels_[tree_[index].depth];
  if (level.pack()) return PackIntoBranches(index, n);
  if (level.weighted()) return SpreadByWeight(index, n);
  std::vector<uint32_t> usable;
  usable.reserve(tree_[index].children.size());
  for (const auto& [value, child] : tree_[index].children) usable.push_back(child);
  return SpreadOverBranches(std::move(usable), n);
}

// Splits n tasks over the branches: repeatedly compute the desired level
//   desired = (tasks in usable branches + tasks still to place) / usable branches
// (remainder: one extra each to branches at the level), give each branch below
// the level enough to reach it, and mark a branch full when it places fewer
// than asked. Branch totals include what this loop has placed so far.
int Scheduler::Pass::SpreadOverBranches(std::vector<uint32_t> usable, int n) {
  int64_t usable_tasks = 0;
  for (uint32_t child : usable) usable_tasks += tree_[child].tasks;
  int scheduled = 0;
  while (scheduled < n && !usable.empty()) {
    int64_t total = usable_tasks + (n - scheduled);
    int64_t branches = static_cast<int64_t>(usable.size());
    int64_t desired = total / branches, remainder = total % branches;
    bool progress = false;
    for (size_t b = 0; b < usable.size() && scheduled < n;) {
      int64_t have = tree_[usable[b]].tasks;
      if (have > desired || (have == desired && remainder == 0)) {
        ++b;
        continue;
      }
      int ask = static_cast<int>(
          std::min<int64_t>(desired - have + (remainder > 0 ? 1 : 0), n - scheduled));
      int got = PlaceOnSubtree(usable[b], ask);
      tree_[usable[b]].tasks += got;
      usable_tasks += got;
      scheduled += got;
      progress = progress || got > 0;
      if (got < ask) {
        usable_tasks -= tree_[usable[b]].tasks;
        usable.erase(usable.begin() + static_cast<std::ptrdiff_t>(b));
        progress = true;
        continue;
      }
      if (remainder > 0) --remainder;
      ++b;
    }
    if (!progress) break;  // required: without it the loop could spin forever
  }
  return scheduled;
}

// A weighted spread: each usable branch b of weight w_b > 0 is given its
// share of the total T = (tasks in usable branches + tasks still to place),
//   target_b = floor(T * w_b / W),  W = sum of the usable branches' weights,
// and the T - sum(target) left over go one each to the branches with the
// largest remainders (T * w_b mod W), ties in branch order. A branch below
// its target is asked for the difference; one that places fewer than asked
// leaves the usable set, and the split repeats (no-progress stop as above).
// Branches of weight 0 take what is left, as an unweighted spread, only
// once every weighted branch is full.
int Scheduler::Pass::SpreadByWeight(uint32_t index, int n) {
  const TreeLevel& level = levels_[tree_[index].depth];
  struct Branch {
    uint32_t child;
    int64_t weight;
  };
  std::vector<Branch> usable;
  std::vector<uint32_t> unweighted;
  for (const auto& [value, child] : tree_[index].children) {
    const uint32_t weight = level.WeightOf(value);
    if (weight > 0) {
      usable.push_back({child, weight});
    } else {
      unweighted.push_back(child);
    }
  }
  int scheduled = 0;
  std::vector<int64_t> target;
  std::vector<size_t> by_remainder;
  while (scheduled < n && !usable.empty()) {
    int64_t total = n - scheduled, weights = 0;
    for (const Branch& b : usable) {
      total += tree_[b.child].tasks;
      weights += b.weight;
    }
    target.assign(usable.size(), 0);
    by_remainder.resize(usable.size());
    int64_t given = 0;
    for (size_t b = 0; b < usable.size(); ++b) {
      target[b] = total * usable[b].weight / weights;
      given += target[b];
      by_remainder[b] = b;
    }
    std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](size_t x, size_t y) {
      return total * usable[x].weight % weights > total * usable[y].weight % weights;
    });
    for (size_t i = 0; i < static_cast<size_t>(total - given); ++i) ++target[by_remainder[i]];
    bool progress = false;
    for (size_t b = 0; b < usable.size() && scheduled < n;) {
      const int64_t have = tree_[usable[b].child].tasks;
      if (have >= target[b]) {
        ++b;
        continue;
      }
      const int ask = static_cast<int>(std::min<int64_t>(target[b] - have, n - scheduled));
      const int got = PlaceOnSubtree(usable[b].child, ask);
      tree_[usable[b].child].tasks += got;
      scheduled += got;
      progress = progress || got > 0;
      if (got < ask) {
        usable.erase(usable.begin() + static_cast<std::ptrdiff_t>(b));
        target.erase(target.begin() + static_cast<std::ptrdiff_t>(b));
        progress = true;
        continue;
      }
      ++b;
    }
    if (!progress) break;
  }
  if (scheduled < n && !unweighted.empty())
    scheduled += SpreadOverBranches(std::move(unweighted), n - scheduled);
  return scheduled;
}

// Pack: the branch holding the most tasks of the service (this loop's
// placements included; ties in branch order, nodes missing the label last)
// is asked for every task still to place; when it places fewer, it is full
// and the next such branch is asked.
int Scheduler::Pass::PackIntoBranches(uint32_t index, int n) {
  std::vector<uint32_t> usable;  // branch order, "" (missing label) moved last
  uint32_t missing = UINT32_MAX;
  for (const auto& [value, child] : tree_[index].children) {
    if (value.empty()) {
      missing = child;
    } else {
      usable.push_back(child);
    }
  }
  if (missing != UINT32_MAX) usable.push_back(missing);
  int scheduled = 0;
  while (scheduled < n && !usable.empty()) {
    auto fullest = usable.end();
    for (auto it = usable.begin(); it != usable.end(); ++it)
      if (*it != missing && (fullest == usable.end() || tree_[*it].tasks > tree_[*fullest].tasks))
        fullest = it;
    if (fullest == usable.end()) fullest = usable.begin();  // only the unlabelled nodes are left
    const int ask = n - scheduled;
    const int got = PlaceOnSubtree(*fullest, ask);
    tree_[*fullest].tasks += got;
    scheduled += got;
    if (got < ask) usable.erase(fullest);
  }
  return scheduled;
}

// Sorts a leaf best first. From the second visit on, nodes are re-checked
// first, since placements may have filled them.
void Scheduler::Pass::OrderLeaf(TreeNode& leaf) {
  if (leaf.ordered_once) {
    std::erase_if(leaf.leaf, [&](Candidate& c) {
      c.key = KeyOf(c.node);
      return !pipeline_.Process(state_.node(c.node));
    });
  }
  if (leaf.heap_ready) {
    std::sort_heap(leaf.leaf.begin(), leaf.leaf.end());
    leaf.heap_ready = false;
  } else {
    std::sort(leaf.leaf.begin(), leaf.leaf.end());
  }
  leaf.ordered_once = true;
}

// Fills the first node until the next one is strictly better, then moves on;
// past the last node, goes round-robin. Nodes that stop passing the filters are
// skipped for the rest of this call.
int Scheduler::Pass::PlaceOnLeaf(TreeNode& leaf, int n) {
  OrderLeaf(leaf);
  if (!soft_.empty()) return PlaceBestFirst(leaf.leaf, n);
  std::vector<Candidate>& nodes = leaf.leaf;
  const size_t count = nodes.size();
  if (count == 0) return 0;
  failed_.assign(count, 0);
  size_t at = 0;             // the node to use next
  bool round_robin = false;  // true once `at` has moved past the last node
  auto advance = [&] {
    if (++at == count) {
      at = 0;
      round_robin = true;
    }
  };
  int scheduled = 0;
  while (next_task_ < group_.size()) {
    Candidate& current = nodes[at];
    AssignNext(current.node);
    // The task placed is active: one more of the service, one more in total
    // (and, for binpack, less room left).
    current.key = binpack_ ? KeyOf(current.node) : current.key.WithOneMoreTask();
    if (++scheduled == n) return scheduled;
    if (round_robin || at + 1 == count || nodes[at + 1] < current) advance();
    for (size_t skipped = 0; failed_[at] || !pipeline_.Process(state_.node(nodes[at].node));) {
      failed_[at] = 1;
      advance();
      if (++skipped == count) return scheduled;  // no node passes any more
    }
  }
  return scheduled;
}

// Gives each of up to n tasks the passing node of `nodes` with the smallest
// key: a min-heap in which only the node just used changes (placing a task
// changes only its node's key and filters). Nodes that stop passing leave
// `nodes`. Used by leaves of groups with soft rules, where the walk above
// could pass over a node that meets them for one that does not (it compares
// a node only with the next one), and by runs of one-off tasks.
int Scheduler::Pass::PlaceBestFirst(std::vector<Candidate>& nodes, int n) {
  auto worse = [](const Candidate& a, const Candidate& b) { return b < a; };
  std::make_heap(nodes.begin(), nodes.end(), worse);
  int scheduled = 0;
  while (scheduled < n && next_task_ < group_.size() && !nodes.empty()) {
    std::pop_heap(nodes.begin(), nodes.end(), worse);
    Candidate& best = nodes.back();
    AssignNext(best.node);
    ++scheduled;
    if (pipeline_.Process(state_.node(best.node))) {
      best.key = KeyOf(best.node);
      std::push_heap(nodes.begin(), nodes.end(), worse);
    } else {
      nodes.pop_back();
    }
  }
  return scheduled;
}

// A run of one-off tasks with the same service and spec and no preferences.
// Placing them one by one with a full scan each picks, every time, the best
// passing node; only the node just used changes, so a min-heap of passing
// nodes gives the same choices in O(log nodes) per task.
void Scheduler::Pass::ScheduleOneOffRun(std::span<const TaskIndex> tasks) {
  group_ = tasks;
  next_task_ = 0;
  const TaskRecord& first = state_.task(tasks.front());
  LoadGroup(first);
  std::vector<Candidate> passing;
  for (NodeIndex n = 0; n < state_.node_count(); ++n)
    if (pipeline_.Process(state_.node(n))) passing.push_back({KeyOf(n), n});
  PlaceBestFirst(passing, static_cast<int>(tasks.size()));
  if (next_task_ == group_.size()) return;
  // Nothing passes any more: explain as a fresh per-task scan would.
  LoadFilters(first);
  for (NodeIndex n = 0; n < state_.node_count(); ++n) (void)pipeline_.Process(state_.node(n));
  LeaveRestPending(pipeline_.Explain());
}

// For one task of a service with no active task anywhere, no faulty node and
// no spread preference, every node's key is LoadKeyOf (the service's count is
// 0 everywhere), the same order for every such group of the pass, and the
// scan would choose the first passing node in it. So the pass keeps one heap
// of all nodes by that key and pops until a node passes: a few heap steps
// instead of a visit of every node. A pass only adds tasks, so a stored key is
// never above the node's current one; a stale entry is pushed back with its
// current key, which keeps the top the true best. After kMaxTried failing
// nodes, returns false and the caller scans as usual.
bool Scheduler::Pass::PlaceOnLeastLoaded() {
  constexpr size_t kMaxTried = 32;
  auto worse = [](const Candidate& a, const Candidate& b) { return b < a; };
  if (!by_load_built_) {
    by_load_.clear();
    for (NodeIndex n = 0; n < state_.node_count(); ++n) by_load_.push_back({LoadKeyOf(n), n});
    std::make_heap(by_load_.begin(), by_load_.end(), worse);
    by_load_built_ = true;
  }
  tried_.clear();
  bool placed = false;
  while (!placed && !by_load_.empty() && tried_.size() < kMaxTried) {
    std::pop_heap(by_load_.begin(), by_load_.end(), worse);
    Candidate top = by_load_.back();
    by_load_.pop_back();
    if (const NodeKey now = LoadKeyOf(top.node); top.key < now) {
      by_load_.push_back({now, top.node});
      std::push_heap(by_load_.begin(), by_load_.end(), worse);
      continue;
    }
    if (pipeline_.Process(state_.node(top.node))) {
      AssignNext(top.node);
      top.key = LoadKeyOf(top.node);
      placed = true;
    }
    tried_.push_back(top);
  }
  for (const Candidate& c : tried_) {
    by_load_.push_back(c);
    std::push_heap(by_load_.begin(), by_load_.end(), worse);
  }
  return placed;
}

}  // namespace berth::placement
