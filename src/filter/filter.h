// Filter: one check of the placement pipeline (docs/placement.md, "Filter
// pipeline"), usable by every engine (full view, agents' sampling pipelines).
//
// Contract, as in SwarmKit: SetTask loads a task once and precomputes what does
// not depend on the node, returning whether the filter takes part for that
// task; Check is then called for many nodes and must not allocate; Explain
// turns a count of rejected nodes into the text shown to users. A filter
// instance belongs to one pipeline and is used from one thread at a time.
#pragma once

#include <string>

#include "core/node_info.h"
#include "core/task.h"

namespace berth::filter {

class Filter {
 public:
  virtual ~Filter() = default;
  virtual bool SetTask(const TaskSpec& spec, ServiceIndex service) = 0;
  virtual bool Check(const NodeInfo& node) const = 0;
  virtual std::string Explain(int nodes) const = 0;
};

// "<one>" for one node, "<n> <many>" otherwise: the plural forms every filter uses.
std::string CountNodes(int nodes, const char* prefix, const char* suffix);

}  // namespace berth::filter
