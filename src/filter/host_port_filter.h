// Filter 6: none of the task's host-mode published (protocol, port) pairs is
// used by a task tracked on the node. tcp/58 and udp/58 are different pairs.
#pragma once

#include <cstdint>
#include <vector>

#include "filter/filter.h"

namespace berth::filter {

class HostPortFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec& spec, ServiceIndex) override;
  bool Check(const NodeInfo& node) const override {
    for (uint32_t key : ports_)
      if (node.PortInUse(key)) return false;
    return true;
  }
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "host-mode port already in use on ", "");
  }

 private:
  std::vector<uint32_t> ports_;  // PortSpec::Key of each host-mode published port
};

}  // namespace berth::filter
