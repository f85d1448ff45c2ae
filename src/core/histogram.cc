#include "core/histogram.h"

#include <algorithm>

namespace berth {

std::span<const double> Histogram::DefaultBounds() {
  static constexpr double kBounds[] = {0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                       0.1,    0.25,   0.5,   1,      2.5,   5,    10,    30};
  return kBounds;
}

std::span<const double> Histogram::WaitBounds() {
  static constexpr double kBounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                       2.5,   5,    10,    30,   60,  300,  900, 3600};
  return kBounds;
}

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()), counts_(bounds.size() + 1) {}

void Histogram::Observe(std::chrono::nanoseconds took) {
  const int64_t ns = std::max<int64_t>(0, took.count());
  const double seconds = static_cast<double>(ns) / 1e9;
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::Cumulative() const {
  std::vector<uint64_t> out(counts_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    out[i] = total;
  }
  return out;
}

double Histogram::sum_seconds() const {
  return static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
}

Histogram& LabeledHistograms::With(const std::string& labels) {
  std::lock_guard lock(mu_);
  std::unique_ptr<Histogram>& h = by_labels_[labels];
  if (!h) h = std::make_unique<Histogram>();
  return *h;
}

std::vector<std::pair<std::string, const Histogram*>> LabeledHistograms::All() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, const Histogram*>> all;
  for (const auto& [labels, h] : by_labels_) all.emplace_back(labels, h.get());
  return all;
}

}  // namespace berth
