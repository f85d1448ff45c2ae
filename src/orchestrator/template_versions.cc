#include "orchestrator/template_versions.h"

namespace berth::orchestrator {

bool TemplateVersions::RunsCurrent(uint64_t version) const {
  if (version >= since) return true;
  for (const auto& [from, to] : earlier)
    if (version >= from && version < to) return true;
  return false;
}

TemplateVersions RolledBackVersions(const TemplateVersions& current, uint64_t version) {
  TemplateVersions back{version, {}};
  uint64_t from = 0;
  for (const auto& [lo, hi] : current.earlier) {
    if (lo > from) back.earlier.emplace_back(from, lo);
    from = hi;
  }
  if (current.since > from) back.earlier.emplace_back(from, current.since);
  if (back.earlier.size() > kMaxTemplateRanges)
    back.earlier.erase(back.earlier.begin(), back.earlier.end() - kMaxTemplateRanges);
  return back;
}

}  // namespace berth::orchestrator
