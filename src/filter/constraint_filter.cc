#include "filter/constraint_filter.h"

namespace berth::filter {

bool ConstraintFilter::SetTask(const TaskSpec& spec, ServiceIndex) {
  if (spec.constraints.empty()) return false;
  // Runs of tasks share a spec: parse once per spec, not once per task.
  if (parsed_for_ != &spec) {
    auto parsed = constraint::ParseAll(spec.constraints);
    constraints_ = parsed.ok() ? std::move(parsed).value() : std::vector<constraint::Constraint>{};
    parsed_for_ = &spec;
  }
  return !constraints_.empty();
}

}  // namespace berth::filter
