// TemplateVersions: which spec versions of a service run its current task
// template. A task is outdated, and a rolling update replaces it, when its
// template differs from the service's, whatever its version number (as
// SwarmKit's IsTaskDirty compares specs): an update makes a new template
// from its version on; a rebalance makes a version without a new template;
// a rollback returns to the template that older versions ran, so their
// tasks are not replaced.
//
// Value type; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace berth::orchestrator {

struct TemplateVersions {
  // Versions from `since` on run the current template ...
  uint64_t since = 0;
  // ... and so do those in these ranges [from, to): ascending, disjoint,
  // below `since`. Default: none.
  std::vector<std::pair<uint64_t, uint64_t>> earlier;

  bool RunsCurrent(uint64_t version) const;
  bool operator==(const TemplateVersions&) const = default;
};

// The most recent ranges a rollback keeps: tasks of older ones count as
// outdated (replaced, as before rollbacks compared templates).
inline constexpr size_t kMaxTemplateRanges = 16;

// A rollback at spec version `version` returns to the template before
// `current`'s, which ran every version below current.since outside
// current.earlier (the two templates a service keeps): those, and
// `version` on.
TemplateVersions RolledBackVersions(const TemplateVersions& current, uint64_t version);

}  // namespace berth::orchestrator
