// The `berth plan` admission document (docs/plan.md, "Admission
// documents"): decoding into the inputs of one fair-share iteration.
//
// Decoding checks the document's shape (unknown fields, types, unique ids)
// and expands counts into tasks; the class configuration itself (percents,
// patterns) is validated by fairshare::Config, so the rules and messages
// live in one place. Errors are InvalidArgument with the field's
// path. docs/plan.md lists every field. Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/time.h"
#include "fairshare/admission.h"

namespace berth::api {

struct AdmissionDocument {
  Timestamp now;        // the document's "now", or the caller's default
  int64_t workers = 0;  // W
  std::vector<fairshare::ClassShare> classes;  // as written, validated by fairshare::Config
  // The ordered requestor map. Absent in the document: each class matches
  // requestors equal to its name (anchored, with the name quoted).
  std::vector<fairshare::RequestorRule> requestors;
  int64_t rebalance_threshold = 0;     // <= 0: rebalancing off
  Duration rebalance_min_duration{0};  // <= 0: rebalancing off
  std::optional<Duration> over_since;  // how long the spread has been over the threshold
  std::vector<fairshare::Job> jobs;    // arrival order
};

// Whether a parsed document is an admission document rather than a placement
// one: it has "workers", "classes", "requestors", "rebalance" or "jobs".
bool IsAdmissionDocument(const nlohmann::json& doc);

// Decodes an admission document. Counts expand to tasks "r0, r1, ..." (r0
// started most recently: r<i> started i seconds before now) and "t0, t1, ...".
// Each job's waiting tasks come out in choice order (longest expected
// duration first), as fairshare::Job requires.
Result<AdmissionDocument> DecodeAdmissionDocument(const nlohmann::json& doc, Timestamp default_now);

// The Admission a document describes: its configuration (errors from
// fairshare::Config, prefixed with the field: "classes: ..." or
// "requestors: ...") and its rebalance timer.
Result<fairshare::Admission> MakeAdmission(const AdmissionDocument& doc);

// The plan output: {"start": {class: n}, "stop": {class: n}, "start_tasks":
// ["job/task", ...], "stop_tasks": [...]}, classes in class order, tasks in
// the order chosen. Every configured class appears in start and stop.
nlohmann::ordered_json EncodeAdmissionResult(const AdmissionDocument& doc,
                                             const fairshare::Config& config,
                                             const fairshare::IterationResult& result);

}  // namespace berth::api
