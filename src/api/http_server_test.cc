#include "api/http_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "core/histogram.h"

namespace berth::api {
namespace {

std::string Text(const MetricsText& metrics) { return metrics.Response().text; }

TEST(MetricSample, ReadsBackWhatMetricsTextWrote) {
  MetricsText metrics;
  metrics.Add("berth_passes_total", "Passes.", 12);
  metrics.AddLabeled("berth_nodes", "Nodes.", "gauge",
                     {{MetricLabel("state", "ready"), 3}, {MetricLabel("state", "down"), 0.5}});
  const std::string text = Text(metrics);
  EXPECT_EQ(MetricSample(text, "berth_passes_total"), 12);
  EXPECT_EQ(MetricSample(text, "berth_nodes{state=\"ready\"}"), 3);
  EXPECT_EQ(MetricSample(text, "berth_nodes{state=\"down\"}"), 0.5);
}

TEST(MetricSample, TellsAMissingMetricFromZero) {
  MetricsText metrics;
  metrics.Add("berth_errors_total", "Errors.", 0);
  const std::string text = Text(metrics);
  EXPECT_EQ(MetricSample(text, "berth_errors_total"), 0);
  EXPECT_EQ(MetricSample(text, "berth_renamed_total"), std::nullopt);
  // A name that only starts another's is not that metric; HELP and TYPE
  // lines are not samples.
  EXPECT_EQ(MetricSample(text, "berth_errors"), std::nullopt);
  EXPECT_EQ(MetricSample(text, "# TYPE"), std::nullopt);
  EXPECT_EQ(MetricSample("", "berth_errors_total"), std::nullopt);
}

TEST(MetricSample, ReadsAHistogramsSumAndCount) {
  const std::vector<double> bounds{0.1, 1};
  Histogram h(bounds);
  h.Observe(std::chrono::milliseconds(50));
  h.Observe(std::chrono::milliseconds(500));
  MetricsText metrics;
  metrics.AddHistograms("berth_pass_seconds", "Passes.", {{"", &h}});
  const std::string text = Text(metrics);
  EXPECT_EQ(MetricSample(text, "berth_pass_seconds_count"), 2);
  EXPECT_NEAR(*MetricSample(text, "berth_pass_seconds_sum"), 0.55, 1e-9);
  EXPECT_EQ(MetricSample(text, "berth_pass_seconds_bucket{le=\"+Inf\"}"), 2);
}

}  // namespace
}  // namespace berth::api
