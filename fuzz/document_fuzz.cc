// libFuzzer target: the document decoders (`berth plan`'s placement and
// admission documents, berth-agent's nodes file), from text in JSON or YAML.
// Any input must give a value or an error Status, never a crash, a sanitizer
// report or an unbounded allocation. api_body_fuzz covers request bodies.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/admission_codec.h"
#include "api/cluster_codec.h"
#include "api/document.h"
#include "api/plan_codec.h"

namespace {

// Placement documents expand services into tasks; a few valid replica
// counts add up to millions of tasks, which is slow, not a bug. Skip those.
bool SmallEnough(const nlohmann::json& doc) {
  uint64_t replicas = 0;
  if (auto services = doc.find("services"); services != doc.end() && services->is_array())
    for (const auto& s : *services)
      if (s.is_object() && s.contains("replicas") && s["replicas"].is_number_unsigned())
        replicas += s["replicas"].get<uint64_t>();
  return replicas <= 10'000;
}

// Berth's bounded JSON builder against nlohmann's own parser: whatever
// ParseJsonText accepts, nlohmann must read as the same value.
void AcceptedJsonIsWhatNlohmannReads(const std::string& text) {
  berth::Result<nlohmann::json> bounded = berth::api::ParseJsonText(text);
  if (!bounded.ok()) return;
  const nlohmann::json plain = nlohmann::json::parse(text, nullptr, false);
  if (plain.is_discarded() || plain != *bounded) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  berth::Result<nlohmann::json> doc = berth::api::ParseDocumentText(text);
  if (doc.ok() && doc->is_object()) {
    if (berth::api::IsAdmissionDocument(*doc)) {
      (void)berth::api::DecodeAdmissionDocument(*doc, berth::Timestamp{});
    } else if (SmallEnough(*doc)) {
      (void)berth::api::PlanPlacement(*doc, berth::Timestamp{});
    }
  }
  if (doc.ok()) (void)berth::api::DecodeNodeList(*doc);
  AcceptedJsonIsWhatNlohmannReads(text);
  return 0;
}
