// NodePlugin: a filter and/or score evaluated by an agent's sampling
// pipelines on each proposed node (docs/threephase.md, "Plugins").
//
// Contract, as for the placement filters: SetTask precomputes per task what
// does not depend on the node; Filter and Score are then called for many
// nodes, with the node locked, and must not allocate. Scores are integers in
// 0..100. Each sampling pipeline owns its own plugin instances, so a plugin
// is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/nodes_cache.h"
#include "agent/protocol.h"

namespace berth::agent {

class NodePlugin {
 public:
  virtual ~NodePlugin() = default;
  virtual std::string_view name() const = 0;
  virtual void SetTask(const PlacementTask& task) = 0;
  virtual bool Filter(const AgentNode& node) const = 0;
  // Whether Score takes part in the final score.
  virtual bool HasScore() const = 0;
  virtual int64_t Score(const AgentNode& node) const = 0;
  // Why the last node Filter rejected failed, when the plugin can say more
  // than its name; "" otherwise.
  virtual std::string Explain() const { return ""; }
};

struct WeightedPlugin {
  std::unique_ptr<NodePlugin> plugin;
  int64_t weight = 1;  // for the final score; ignored when the plugin has no score
};

}  // namespace berth::agent
