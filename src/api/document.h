// Document text (JSON or YAML) to a JSON value, for every decoder that reads
// user-written documents (`berth plan`, later the API).
//
// Text whose first non-space character is '{' is JSON; anything else is YAML,
// converted to the same JSON shape so that both spellings decode alike. Plain
// YAML scalars get their type from the YAML 1.2 core schema (integers, floats,
// true/false, null); quoted scalars and `!!str` stay strings. Parse errors,
// duplicate keys and unsupported YAML (non-scalar keys, other tags, several
// documents in one stream) are InvalidArgument with the line; no exception
// escapes. Pure function; safe to call from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace berth::api {

Result<nlohmann::json> ParseDocumentText(std::string_view text);

// What a JSON parse failure says, without nlohmann's "[json.exception.x.n] "
// prefix: "parse error at line 1, column 13: ...". Every nlohmann exception
// counts: a number too large for a double is out_of_range, not parse_error.
std::string JsonErrorMessage(const nlohmann::json::exception& e);

}  // namespace berth::api
