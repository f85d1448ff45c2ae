// Filter 5: the node's platform is one the task supports. A listed platform
// matches when (arch empty or equal) and (os empty or equal), after
// normalising x86_64 -> amd64 and aarch64 -> arm64 on both sides. A node that
// reports no platform fails.
#pragma once

#include <string_view>
#include <vector>

#include "filter/filter.h"

namespace berth::filter {

// "x86_64" -> "amd64", "aarch64" -> "arm64", anything else unchanged.
std::string_view NormaliseArch(std::string_view arch);

class PlatformFilter final : public Filter {
 public:
  bool SetTask(const TaskSpec& spec, ServiceIndex) override;
  bool Check(const NodeInfo& node) const override;
  std::string Explain(int nodes) const override {
    return CountNodes(nodes, "unsupported platform on ", "");
  }

 private:
  const std::vector<Platform>* platforms_ = nullptr;
};

}  // namespace berth::filter
