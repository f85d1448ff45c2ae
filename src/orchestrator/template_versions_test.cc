#include "orchestrator/template_versions.h"

#include <gtest/gtest.h>

namespace berth::orchestrator {
namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(TemplateVersions, VersionsFromSinceOnAndInTheRangesRunTheCurrentTemplate) {
  const TemplateVersions versions{5, {{0, 2}, {3, 4}}};
  for (uint64_t v : {0, 1, 3, 5, 9}) EXPECT_TRUE(versions.RunsCurrent(v)) << v;
  for (uint64_t v : {2, 4}) EXPECT_FALSE(versions.RunsCurrent(v)) << v;
}

// v1 ran A, v2 B (an update), v3 A again (a rollback): v1's tasks keep
// running; rolled back again (v4, B), only v2's do.
TEST(TemplateVersions, ARollbackReturnsToTheVersionsOfThePreviousTemplate) {
  const TemplateVersions first = RolledBackVersions({2, {}}, 3);
  EXPECT_EQ(first, (TemplateVersions{3, Ranges{{0, 2}}}));
  EXPECT_TRUE(first.RunsCurrent(1));
  EXPECT_FALSE(first.RunsCurrent(2));
  const TemplateVersions second = RolledBackVersions(first, 4);
  EXPECT_EQ(second, (TemplateVersions{4, Ranges{{2, 3}}}));
  EXPECT_EQ(RolledBackVersions(second, 5), (TemplateVersions{5, Ranges{{0, 2}, {3, 4}}}));
  // A service whose first version is its template's has nothing before.
  EXPECT_EQ(RolledBackVersions({0, {}}, 2), (TemplateVersions{2, {}}));
}

TEST(TemplateVersions, OnlyTheMostRecentRangesAreKept) {
  TemplateVersions versions{1, {}};
  for (uint64_t v = 2; v < 60; ++v) versions = RolledBackVersions(versions, v);
  // Rolled back at every version, the template alternates: 59 and 57 run
  // the current one, 58 the other; the oldest ranges are dropped.
  EXPECT_EQ(versions.earlier.size(), kMaxTemplateRanges);
  EXPECT_TRUE(versions.RunsCurrent(59));
  EXPECT_FALSE(versions.RunsCurrent(58));
  EXPECT_TRUE(versions.RunsCurrent(57));
  EXPECT_FALSE(versions.RunsCurrent(3));
}

}  // namespace
}  // namespace berth::orchestrator
