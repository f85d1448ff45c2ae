#include "placement/batch_window.h"

#include <algorithm>

namespace berth::placement {

void BatchWindow::OnEvent(Timestamp now) {
  if (!first_) first_ = now;
  last_ = now;
}

std::optional<Timestamp> BatchWindow::Deadline() const {
  if (!first_) return std::nullopt;
  // deadline = min(last event + quiet, first event + max_delay)
  return std::min(*last_ + options_.quiet, *first_ + options_.max_delay);
}

bool BatchWindow::Due(Timestamp now) const {
  auto deadline = Deadline();
  return deadline && now >= *deadline;
}

}  // namespace berth::placement
