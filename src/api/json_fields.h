// Strict reading of JSON documents: typed field readers whose errors name the
// offending value by its path ("nodes[0].resources.cpu: ...").
//
// Shared by the document decoders (plan_codec, cluster_codec). Every reader
// checks the JSON type, writes *out only on success and returns a Status whose
// message starts with `path`. Unknown fields are caught by CheckObject, which
// each object decoder calls first. Pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/node.h"
#include "core/status.h"
#include "core/time.h"

namespace berth::api {

using Json = nlohmann::json;

// "parent.field" ("field" at the root) and "parent[index]".
std::string FieldPath(const std::string& parent, std::string_view field);
std::string IndexPath(const std::string& parent, size_t index);

// `value` as JSON text for an error message, cut after 64 bytes.
std::string Brief(const Json& value);

// InvalidArgument "<path>: <message>" (just the message at the root).
Status FieldError(const std::string& path, const std::string& message);

// "expected <what>, got <JSON type>" at `path`.
Status TypeError(const Json& value, const std::string& path, std::string_view what);

// Checks that `value` is an object whose keys are all in `allowed`; the first
// other key is `<path>: unknown field '<key>'`.
Status CheckObject(const Json& value, const std::string& path,
                   std::initializer_list<std::string_view> allowed);
Status CheckArray(const Json& value, const std::string& path);

Status ReadString(const Json& value, const std::string& path, std::string* out);
// The naming rules of core/names.h: an id (nodes, services, jobs, classes,
// agents, generic resources), a task id, non-empty text (plugin, network and
// driver names, requestors, task names) and possibly empty text (hostnames,
// platforms, log drivers), each at most kMaxTextBytes.
Status ReadId(const Json& value, const std::string& path, std::string* out);
Status ReadTaskId(const Json& value, const std::string& path, std::string* out);
Status ReadName(const Json& value, const std::string& path, std::string* out);
Status ReadText(const Json& value, const std::string& path, std::string* out);
// Text of at most `max_bytes` (ReadText's rule with another bound: the
// longer constraints and requestor patterns).
Status ReadTextUpTo(const Json& value, const std::string& path, size_t max_bytes, std::string* out);
// Text that another program wrote and Berth only shows (a node's status
// message, its reason limits do not hold): any string, made one line
// (control characters become spaces) and cut to `max_bytes` at a UTF-8
// character boundary. Only a non-string is an error.
inline constexpr size_t kMaxShownTextBytes = 1024;
std::string ShownText(std::string_view text, size_t max_bytes = kMaxShownTextBytes);
Status ReadShownText(const Json& value, const std::string& path, std::string* out);
// true or false.
Status ReadBool(const Json& value, const std::string& path, bool* out);
// A non-negative integer (JSON floats such as 1.5 or 1e3 are rejected).
Status ReadUnsigned(const Json& value, const std::string& path, uint64_t* out);
// An integer, possibly negative (JSON floats such as 1.5 are rejected).
Status ReadInteger(const Json& value, const std::string& path, int64_t* out);
// A non-negative number of seconds (fractions allowed, kept to the millisecond).
Status ReadSeconds(const Json& value, const std::string& path, Duration* out);
// A list whose every item is read with `read` (ReadId, ReadName, ...).
template <typename T, typename Reader>
Status ReadList(const Json& value, const std::string& path, Reader read, std::vector<T>* out) {
  BERTH_RETURN_IF_ERROR(CheckArray(value, path));
  std::vector<T> items(value.size());
  for (size_t i = 0; i < value.size(); ++i)
    BERTH_RETURN_IF_ERROR(read(value[i], IndexPath(path, i), &items[i]));
  *out = std::move(items);
  return Status::Ok();
}
// An object of labels: keys and values by core/names.h's label rules.
Status ReadLabels(const Json& value, const std::string& path, Labels* out);
// CPUs: a number (0.5) or a string ("0.5", "500m"); milli-CPU out.
Status ReadMilliCpu(const Json& value, const std::string& path, int64_t* out);
// Bytes: an integer or whole number (1e9), or a string ("512Mi", "1.5G").
Status ReadBytes(const Json& value, const std::string& path, int64_t* out);
// An RFC 3339 time string.
Status ReadTime(const Json& value, const std::string& path, Timestamp* out);

// Reads object[name] with `read` when present; leaves *out alone when absent.
template <typename T, typename Reader>
Status ReadField(const Json& object, const char* name, const std::string& path, Reader read,
                 T* out) {
  const auto it = object.find(name);
  if (it == object.end()) return Status::Ok();
  return read(*it, FieldPath(path, name), out);
}

// Like ReadField, but a missing field is `<path>: missing field '<name>'`.
template <typename T, typename Reader>
Status RequireField(const Json& object, const char* name, const std::string& path, Reader read,
                    T* out) {
  if (!object.contains(name)) return FieldError(path, "missing field '" + std::string(name) + "'");
  return ReadField(object, name, path, read, out);
}

// A reader for an enum spelled as text, from a core Parse* function.
template <typename E>
auto EnumReader(Result<E> (*parse)(std::string_view)) {
  return [parse](const Json& value, const std::string& path, E* out) -> Status {
    std::string text;
    BERTH_RETURN_IF_ERROR(ReadString(value, path, &text));
    Result<E> parsed = parse(text);
    if (!parsed.ok()) return FieldError(path, parsed.status().message());
    *out = *parsed;
    return Status::Ok();
  };
}

}  // namespace berth::api
