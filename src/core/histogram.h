// Histogram: how long something took, in Prometheus's shape (cumulative
// buckets of seconds, a sum and a count), for /metrics. Observe is a few
// relaxed atomic adds, from any thread, with no lock and no allocation;
// a reader (a scrape) sees each bucket's count at some moment, so a
// scrape during observations may be off by the observations in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace berth {

class Histogram {
 public:
  // Upper bounds in seconds, ascending (+Inf is implied): 0.5 ms to 10 s,
  // as Prometheus client libraries' defaults, with 0.1 ms and 30 s added
  // for a fast pass and a slow etcd.
  static std::span<const double> DefaultBounds();
  // For waits of queued work (a task from creation to running, which a
  // job's may spend in its class's queue): 5 ms to an hour.
  static std::span<const double> WaitBounds();

  explicit Histogram(std::span<const double> bounds = DefaultBounds());
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(std::chrono::nanoseconds took);

  std::span<const double> bounds() const { return bounds_; }
  // Observations at most bounds()[i] seconds, for each i, then all of them
  // (the +Inf bucket).
  std::vector<uint64_t> Cumulative() const;
  double sum_seconds() const;

 private:
  const std::vector<double> bounds_;
  std::vector<std::atomic<uint64_t>> counts_;  // per bucket, the last one +Inf
  std::atomic<uint64_t> sum_ns_{0};
};

// Histograms by label set ('route="/v1/nodes",method="GET",code="200"'),
// each made at its first observation. With takes a lock: for the edges
// (one HTTP request), not a hot loop.
class LabeledHistograms {
 public:
  Histogram& With(const std::string& labels);
  // Every label set so far, in label order, with its histogram.
  std::vector<std::pair<std::string, const Histogram*>> All() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Histogram>> by_labels_;
};

}  // namespace berth
