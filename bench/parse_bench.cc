// parse_bench: what the bounded parsing of issue 13 costs at the edge. Times
// api::ParseJsonText (UTF-8 check, DocumentLimits and duplicate keys, one SAX
// pass into nlohmann's DOM builder) against a plain nlohmann::json::parse of
// the same text: a berth-agent sample request (the most frequent body on the
// three-phase path), a node registration, and a 20,000-node document.
//
// Usage: parse_bench [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/agent_codec.h"
#include "api/document.h"

namespace berth::bench {
namespace {

struct Case {
  const char* name;
  std::string text;
  int reps;
};

std::string SampleRequest() {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = 500;
  spec->reservations.memory_bytes = 256LL << 20;
  spec->constraints = {"node.labels.az==az1"};
  agent::SampleRequest request;
  request.task = {"web.17", 0, spec, {}, {}, {}};
  request.basis_points = 40;
  return api::EncodeSampleRequest(request).dump();
}

std::string Node(int i) {
  return R"({"id": "n)" + std::to_string(i) +
         R"(", "resources": {"cpu": 8, "memory": "32Gi"}, "labels": {"az": "az)" +
         std::to_string(i % 3) + R"(", "rack": "r)" + std::to_string(i % 50) + R"("}})";
}

std::string NodesDocument(int nodes) {
  std::string text = R"({"nodes": [)";
  for (int i = 0; i < nodes; ++i) text += (i ? "," : "") + Node(i);
  return text + "]}";
}

// Microseconds per parse, the best of 5 runs of `reps` parses.
template <typename Parse>
double BestMicros(const Case& c, Parse parse) {
  double best = 1e300;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    size_t sink = 0;
    for (int i = 0; i < c.reps; ++i) sink += parse(c.text);
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    if (sink == 0) std::fprintf(stderr, "parse_bench: nothing parsed\n");
    best = std::min(best, took.count() / c.reps);
  }
  return best;
}

}  // namespace
}  // namespace berth::bench

int main(int argc, char** argv) {
  using namespace berth;
  const bool quick = argc == 2 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 2 || (argc == 2 && !quick)) {
    std::fprintf(stderr, "usage: parse_bench [--quick]\n");
    return 2;
  }
  const int scale = quick ? 100 : 1;
  const std::vector<bench::Case> cases = {
      {"sample request", bench::SampleRequest(), 100'000 / scale},
      {"node registration", bench::Node(7), 100'000 / scale},
      {"20,000-node document", bench::NodesDocument(20'000), 20 / std::min(scale, 20)}};
  std::printf(
      "| body | bytes | nlohmann::json::parse us | api::ParseJsonText us | ratio |\n"
      "|---|---:|---:|---:|---:|\n");
  for (const bench::Case& c : cases) {
    const double plain = bench::BestMicros(
        c, [](const std::string& text) { return nlohmann::json::parse(text).size(); });
    const double bounded = bench::BestMicros(c, [](const std::string& text) {
      Result<nlohmann::json> parsed = api::ParseJsonText(text);
      return parsed.ok() ? parsed->size() : 0;
    });
    std::printf("| %s | %zu | %.2f | %.2f | %.2f |\n", c.name, c.text.size(), plain, bounded,
                bounded / plain);
  }
  return 0;
}
