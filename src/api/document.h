// Document text (JSON or YAML) to a JSON value, for every decoder that reads
// text from outside: `berth plan` documents, berth-agent's nodes file and
// (JSON only) every HTTP request body.
//
// Text whose first non-space character is '{' or '[' is JSON; anything else
// is YAML, converted to the same JSON shape so that both spellings decode
// alike. Plain YAML scalars get their type from the YAML 1.2 core schema
// (integers, floats, true/false, null); quoted scalars and `!!str` stay
// strings. Parse errors, invalid UTF-8, duplicate keys, a breach of
// DocumentLimits and unsupported YAML (non-scalar keys, other tags, several
// documents in one stream) are InvalidArgument saying where; no exception
// escapes. The limits are checked while parsing, before a value past them is
// built, so no input can exhaust the stack or memory. Pure functions; safe to
// call from any thread.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace berth::api {

// The largest document file ReadDocumentFile reads.
inline constexpr size_t kMaxDocumentBytes = size_t{256} << 20;

// The text of the file `path` ("-": `standard_input`), refusing more than
// `max_bytes` before reading it all. InvalidArgument "cannot read 'PATH':
// <reason>" or "'PATH' is larger than N bytes".
Result<std::string> ReadDocumentFile(const std::string& path, std::istream& standard_input,
                                     size_t max_bytes = kMaxDocumentBytes);

// Bounds on one document or body (docs/api.md, "Names and limits").
struct DocumentLimits {
  int max_depth = 32;                // objects and lists nested in each other
  size_t max_string_bytes = 65'536;  // any one string or object key
  size_t max_items = 1'000'000;      // items of one list, or members of one object
  size_t max_values = 10'000'000;    // values in all (a YAML alias counts each time it is used)
};

Result<nlohmann::json> ParseDocumentText(std::string_view text, const DocumentLimits& limits = {});

// JSON text only (an HTTP body): the same checks, and errors that start
// "invalid JSON".
Result<nlohmann::json> ParseJsonText(std::string_view text, const DocumentLimits& limits = {});

// What a JSON parse failure says, without nlohmann's "[json.exception.x.n] "
// prefix: "parse error at line 1, column 13: ...". Every nlohmann exception
// counts: a number too large for a double is out_of_range, not parse_error.
std::string JsonErrorMessage(const nlohmann::json::exception& e);

}  // namespace berth::api
