#include "cli/plan_command.h"

#include <iostream>

#include "api/admission_codec.h"
#include "api/document.h"
#include "api/plan_codec.h"

namespace berth::cli {
namespace {

// One pass of the full-view engine for a placement document.
Result<nlohmann::ordered_json> PlanPlacement(const nlohmann::json& doc, Timestamp now,
                                             const PlanOptions& options) {
  placement::SchedulerOptions scheduler;
  scheduler.tie_break_seed = options.seed;
  scheduler.strategy = options.strategy;
  Result<api::PlacementPlan> plan = api::PlanPlacement(doc, now, scheduler);
  if (!plan.ok()) return plan.status();
  return std::move(plan->output);
}

// Runs one fair-share iteration for an admission document.
Result<nlohmann::ordered_json> PlanAdmission(const nlohmann::json& doc, Timestamp now) {
  Result<api::AdmissionDocument> input = api::DecodeAdmissionDocument(doc, now);
  if (!input.ok()) return input.status();
  Result<fairshare::Admission> admission = api::MakeAdmission(*input);
  if (!admission.ok()) return admission.status();
  fairshare::IterationResult result = admission->Iterate(input->workers, input->jobs, input->now);
  return api::EncodeAdmissionResult(*input, admission->config(), result);
}

// One line per list entry, so a plan reads (and diffs, and greps) by task:
//   {"assignments": [
//     {"task": "web.1", "node": "n1"}],
//    "pending": []}
std::string FormatReadable(const nlohmann::ordered_json& output) {
  std::string text = "{";
  bool first_key = true;
  for (const auto& [key, value] : output.items()) {
    text += first_key ? "" : ",\n ";
    first_key = false;
    text += nlohmann::json(key).dump() + ": ";
    if (!value.is_array() || value.empty() || !value[0].is_object()) {
      text += value.dump();
      continue;
    }
    text += "[";
    for (size_t i = 0; i < value.size(); ++i) text += (i ? ",\n  " : "\n  ") + value[i].dump();
    text += "]";
  }
  return text + "}\n";
}

}  // namespace

Result<std::string> PlanDocument(std::string_view text, const PlanOptions& options, Timestamp now) {
  Result<nlohmann::json> doc = api::ParseDocumentText(text);
  if (!doc.ok()) return doc.status();
  if (!doc->is_object())
    return Status::InvalidArgument(std::string("expected the document to be an object, got ") +
                                   doc->type_name());
  Result<nlohmann::ordered_json> output =
      api::IsAdmissionDocument(*doc) ? PlanAdmission(*doc, now) : PlanPlacement(*doc, now, options);
  if (!output.ok()) return output.status();
  return options.compact ? output->dump() + "\n" : FormatReadable(*output);
}

int RunPlan(const PlanOptions& options, std::istream& in, std::ostream& out, std::ostream& err,
            const Clock& clock) {
  Result<std::string> text = api::ReadDocumentFile(options.file, in);
  if (!text.ok()) {
    err << "berth plan: " << text.status().message() << "\n";
    return 2;
  }
  Result<std::string> output = PlanDocument(*text, options, clock.Now());
  if (!output.ok()) {
    const std::string source = options.file == "-" ? "<stdin>" : options.file;
    err << "berth plan: " << source << ": " << output.status().message() << "\n";
    return 2;
  }
  out << *output;
  return 0;
}

}  // namespace berth::cli
