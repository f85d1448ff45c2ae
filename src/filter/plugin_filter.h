// Filter 3: the network, volume and log drivers the task needs are installed.
// A plugin matches when its name is equal, or is the name plus ":latest". A
// node that reports no log plugins at all skips the log check (an older engine
// that does not report them).
#pragma once

#include "filter/filter.h"

namespace berth::filter {

class PluginFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec& spec, ServiceIndex) override;
  bool Check(const NodeInfo& node) const override;
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "missing plugin on ", "");
  }

 private:
  const TaskSpec* spec_ = nullptr;
};

}  // namespace berth::filter
