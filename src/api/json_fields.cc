#include "api/json_fields.h"

#include <limits>

#include "core/names.h"
#include "core/quantity.h"

namespace berth::api {
namespace {

// Integers exactly (a double would round above 2^53); floats must be whole.
Result<int64_t> BytesFromJsonNumber(const Json& value) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (value.is_number_unsigned() && value.get<uint64_t>() <= kMax)
    return static_cast<int64_t>(value.get<uint64_t>());
  return BytesFromNumber(value.get<double>());
}

}  // namespace

std::string FieldPath(const std::string& parent, std::string_view field) {
  if (parent.empty()) return std::string(field);
  return parent + "." + std::string(field);
}

std::string IndexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string Brief(const Json& value) {
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() <= 64) return text;
  return Quoted(text);  // cut, with the size
}

Status FieldError(const std::string& path, const std::string& message) {
  return Status::InvalidArgument(path.empty() ? message : path + ": " + message);
}

Status TypeError(const Json& value, const std::string& path, std::string_view what) {
  return FieldError(path, "expected " + std::string(what) + ", got " + value.type_name());
}

Status CheckObject(const Json& value, const std::string& path,
                   std::initializer_list<std::string_view> allowed) {
  if (!value.is_object()) return TypeError(value, path, "an object");
  for (const auto& [key, unused] : value.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || name == key;
    if (!known) return FieldError(path, "unknown field " + Quoted(key));
  }
  return Status::Ok();
}

Status CheckArray(const Json& value, const std::string& path) {
  if (!value.is_array()) return TypeError(value, path, "a list");
  return Status::Ok();
}

Status ReadString(const Json& value, const std::string& path, std::string* out) {
  if (!value.is_string()) return TypeError(value, path, "a string");
  *out = value.get<std::string>();
  return Status::Ok();
}

namespace {

// A string that passes `check`.
template <typename Check>
Status ReadChecked(const Json& value, const std::string& path, std::string* out, Check check) {
  if (!value.is_string()) return TypeError(value, path, "a string");
  const std::string& text = value.get_ref<const std::string&>();
  if (Status valid = check(text); !valid.ok()) return FieldError(path, valid.message());
  *out = text;
  return Status::Ok();
}

}  // namespace

Status ReadId(const Json& value, const std::string& path, std::string* out) {
  return ReadChecked(value, path, out, CheckId);
}

Status ReadTaskId(const Json& value, const std::string& path, std::string* out) {
  return ReadChecked(value, path, out, CheckTaskId);
}

Status ReadName(const Json& value, const std::string& path, std::string* out) {
  return ReadChecked(value, path, out, [](std::string_view text) {
    return text.empty() ? Status::InvalidArgument("must not be empty") : CheckText(text);
  });
}

Status ReadText(const Json& value, const std::string& path, std::string* out) {
  return ReadTextUpTo(value, path, kMaxTextBytes, out);
}

Status ReadTextUpTo(const Json& value, const std::string& path, size_t max_bytes,
                    std::string* out) {
  return ReadChecked(value, path, out,
                     [max_bytes](std::string_view text) { return CheckText(text, max_bytes); });
}

std::string ShownText(std::string_view text, size_t max_bytes) {
  size_t end = std::min(text.size(), max_bytes);
  while (end < text.size() && end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
    --end;  // not inside a multi-byte character
  std::string out(text.substr(0, end));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

Status ReadShownText(const Json& value, const std::string& path, std::string* out) {
  if (!value.is_string()) return TypeError(value, path, "a string");
  *out = ShownText(value.get_ref<const std::string&>());
  return Status::Ok();
}

Status ReadBool(const Json& value, const std::string& path, bool* out) {
  if (!value.is_boolean()) return TypeError(value, path, "true or false");
  *out = value.get<bool>();
  return Status::Ok();
}

Status ReadUnsigned(const Json& value, const std::string& path, uint64_t* out) {
  // Parsed text gives non-negative integers the unsigned type; JSON built in
  // code (the daemon's stored objects) may hold them as signed.
  if (value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0)) {
    *out = value.get<uint64_t>();
    return Status::Ok();
  }
  if (value.is_number())
    return FieldError(path, "expected a non-negative integer, got " + value.dump());
  return TypeError(value, path, "a non-negative integer");
}

Status ReadInteger(const Json& value, const std::string& path, int64_t* out) {
  if (value.is_number_integer() &&
      (!value.is_number_unsigned() ||
       value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    *out = value.get<int64_t>();
    return Status::Ok();
  }
  if (value.is_number()) return FieldError(path, "expected an integer, got " + value.dump());
  return TypeError(value, path, "an integer");
}

Status ReadSeconds(const Json& value, const std::string& path, Duration* out) {
  if (!value.is_number()) return TypeError(value, path, "a number of seconds");
  const double seconds = value.get<double>();
  // 1e12 s is over 30,000 years: anything larger is a mistake, not a duration.
  if (!(seconds >= 0 && seconds <= 1e12))
    return FieldError(path, "expected a non-negative number of seconds, got " + value.dump());
  *out = Duration{static_cast<int64_t>(seconds * 1000 + 0.5)};
  return Status::Ok();
}

Status ReadLabels(const Json& value, const std::string& path, Labels* out) {
  if (!value.is_object()) return TypeError(value, path, "an object of labels");
  Labels labels;
  for (const auto& [key, label] : value.items()) {
    if (Status valid = CheckLabelKey(key); !valid.ok()) return FieldError(path, valid.message());
    const std::string label_path = FieldPath(path, key);
    if (!label.is_string()) return TypeError(label, label_path, "a string (quote the value)");
    const std::string& text = label.get_ref<const std::string&>();
    if (Status valid = CheckLabelValue(text); !valid.ok())
      return FieldError(label_path, valid.message());
    labels.emplace(key, text);
  }
  *out = std::move(labels);
  return Status::Ok();
}

Status ReadMilliCpu(const Json& value, const std::string& path, int64_t* out) {
  if (!value.is_number() && !value.is_string())
    return TypeError(value, path, "a number of CPUs or a string like \"500m\"");
  Result<int64_t> milli = value.is_number() ? MilliCpuFromNumber(value.get<double>())
                                            : ParseMilliCpu(value.get<std::string>());
  if (!milli.ok()) return FieldError(path, milli.status().message());
  *out = *milli;
  return Status::Ok();
}

Status ReadBytes(const Json& value, const std::string& path, int64_t* out) {
  if (!value.is_number() && !value.is_string())
    return TypeError(value, path, "a number of bytes or a string like \"512Mi\"");
  Result<int64_t> bytes =
      value.is_string() ? ParseBytes(value.get<std::string>()) : BytesFromJsonNumber(value);
  if (!bytes.ok()) return FieldError(path, bytes.status().message());
  *out = *bytes;
  return Status::Ok();
}

Status ReadTime(const Json& value, const std::string& path, Timestamp* out) {
  std::string text;
  BERTH_RETURN_IF_ERROR(ReadString(value, path, &text));
  Result<Timestamp> time = ParseRfc3339(text);
  if (!time.ok()) return FieldError(path, time.status().message());
  *out = *time;
  return Status::Ok();
}

}  // namespace berth::api
