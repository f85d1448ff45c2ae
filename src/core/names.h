// Berth's rules for the ids, names, labels and free text it stores, in one
// place, so that berthd's API, `berth plan` documents, the `berth` CLI and
// berth-agent's nodes file accept exactly the same values (docs/api.md,
// "Names and limits"):
//
//   id     nodes, services, jobs, classes, agents, generic resource kinds and
//          named instances: 1 to 63 ASCII letters and digits, with '-' and
//          '_' allowed inside (not first or last). SwarmKit's service-name
//          rule, ^[a-zA-Z0-9](?:[-_]*[A-Za-z0-9]+)*$, so an id is a DNS label
//          up to '_', never holds '/', '.', spaces or bytes a URL must escape.
//   task id  ids joined by '.' ("web.3", "edge.n7.2"), at most 255 bytes: the
//          ids Berth makes from a service or job id and a number or node id.
//   label key  1 to 128 ASCII letters, digits, '.', '-' and '_': exactly what
//          a constraint can name as node.labels.<key>.
//   label value  at most 4096 bytes of text.
//   text   hostnames, requestors, plugin and driver names, job task names and
//          the like: at most 255 bytes of text.
// "Text" is valid UTF-8 without control characters (U+0000-U+001F, U+007F).
//
// Check* return InvalidArgument with a message that does not name the field
// (callers prefix the path) and quotes the value safely (Quoted). Pure
// functions; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace berth {

inline constexpr size_t kMaxIdBytes = 63;
inline constexpr size_t kMaxTaskIdBytes = 255;
inline constexpr size_t kMaxLabelKeyBytes = 128;
inline constexpr size_t kMaxLabelValueBytes = 4096;
inline constexpr size_t kMaxTextBytes = 255;

Status CheckId(std::string_view id);
Status CheckTaskId(std::string_view id);
Status CheckLabelKey(std::string_view key);
Status CheckLabelValue(std::string_view value);
// Text of at most `max_bytes` bytes.
Status CheckText(std::string_view text, size_t max_bytes = kMaxTextBytes);

// The offset of the first byte that breaks UTF-8 (a stray continuation byte,
// a truncated or overlong sequence, a surrogate, a code point above
// U+10FFFF), or npos when `text` is valid UTF-8.
size_t FindInvalidUtf8(std::string_view text);

// `value` in single quotes for an error message: invalid UTF-8 bytes and
// control characters as \xNN, and a value over 64 bytes cut, with its size
// ("'aaaa...' (100000 bytes)"). The result is always valid UTF-8.
std::string Quoted(std::string_view value);

}  // namespace berth
