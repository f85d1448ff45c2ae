#include "filter/platform_filter.h"

namespace berth::filter {

std::string_view NormaliseArch(std::string_view arch) {
  if (arch == "x86_64") return "amd64";
  if (arch == "aarch64") return "arm64";
  return arch;
}

bool PlatformFilter::SetTask(const TaskSpec& spec, ServiceIndex) {
  platforms_ = &spec.platforms;
  return !spec.platforms.empty();
}

bool PlatformFilter::Check(const NodeInfo& info) const {
  const auto& have = info.node().platform;
  if (!have) return false;
  std::string_view node_arch = NormaliseArch(have->arch);
  for (const Platform& want : *platforms_) {
    std::string_view arch = NormaliseArch(want.arch);
    if ((arch.empty() || arch == node_arch) && (want.os.empty() || want.os == have->os))
      return true;
  }
  return false;
}

}  // namespace berth::filter
