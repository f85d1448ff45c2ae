#include "api/document.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace berth::api {
namespace {

constexpr int kMaxDepth = 128;  // also stops recursive YAML aliases

// ---------------------------------------------------------------- JSON

// nlohmann keeps the last of duplicate keys silently; Berth rejects them, so a
// callback remembers the keys of every open object.
class DuplicateKeyCheck {
 public:
  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) open_.emplace_back();
    if (event == Event::object_end && !open_.empty()) open_.pop_back();
    if (event == Event::key && !open_.empty() && duplicate_.empty() &&
        !open_.back().insert(parsed.get<std::string>()).second)
      duplicate_ = parsed.get<std::string>();
    return true;
  }
  const std::string& duplicate() const { return duplicate_; }

 private:
  std::vector<std::set<std::string>> open_;
  std::string duplicate_;
};

Result<nlohmann::json> ParseJson(std::string_view text) {
  DuplicateKeyCheck check;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end(), std::ref(check));
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument("invalid JSON: " + JsonErrorMessage(e));
  }
  if (!check.duplicate().empty())
    return Status::InvalidArgument("invalid JSON: duplicate key '" + check.duplicate() + "'");
  return doc;
}

// ---------------------------------------------------------------- YAML

std::string Where(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return " at line " + std::to_string(mark.line + 1) + ", column " +
         std::to_string(mark.column + 1);
}

Status YamlError(const YAML::Mark& mark, const std::string& message) {
  return Status::InvalidArgument("invalid YAML" + Where(mark) + ": " + message);
}

bool AllOf(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsOctal(char c) { return c >= '0' && c <= '7'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string_view WithoutSign(std::string_view s) {
  return (!s.empty() && (s[0] == '-' || s[0] == '+')) ? s.substr(1) : s;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(std::string_view s) {
  s = WithoutSign(s);
  const size_t exp = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, exp);
  if (exp != std::string_view::npos && !AllOf(WithoutSign(s.substr(exp + 1)), IsDigit))
    return false;
  const size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) return AllOf(mantissa, IsDigit);
  std::string_view whole = mantissa.substr(0, dot), fraction = mantissa.substr(dot + 1);
  if (whole.empty()) return AllOf(fraction, IsDigit);
  return AllOf(whole, IsDigit) && (fraction.empty() || AllOf(fraction, IsDigit));
}

// An integer in `digits` (no sign) of the given base, negated when asked; a
// value too large for 64 bits becomes a float, as nlohmann's JSON parser does.
nlohmann::json IntegerValue(std::string_view digits, int base, bool negative) {
  uint64_t magnitude = 0;
  auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1;
  if (error != std::errc() || end != digits.data() + digits.size() ||
      (negative && magnitude > limit)) {
    double value = 0;
    for (char c : digits) value = value * base + (IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    return negative ? -value : value;
  }
  if (!negative) return magnitude;
  if (magnitude == limit) return std::numeric_limits<int64_t>::min();
  return -static_cast<int64_t>(magnitude);
}

nlohmann::json FloatValue(std::string_view s) {
  double value = 0;
  const std::string_view unsigned_part = WithoutSign(s);
  std::from_chars(unsigned_part.data(), unsigned_part.data() + unsigned_part.size(), value);
  return (!s.empty() && s[0] == '-') ? -value : value;
}

// The YAML 1.2 core schema's resolution of a plain (unquoted) scalar.
nlohmann::json ResolvePlain(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  const std::string_view v = s;
  if (AllOf(WithoutSign(v), IsDigit)) return IntegerValue(WithoutSign(v), 10, v[0] == '-');
  if (v.starts_with("0o") && AllOf(v.substr(2), IsOctal))
    return IntegerValue(v.substr(2), 8, false);
  if (v.starts_with("0x") && AllOf(v.substr(2), IsHex)) return IntegerValue(v.substr(2), 16, false);
  if (IsCoreFloat(v)) return FloatValue(v);
  const std::string_view magnitude = WithoutSign(v);
  if (magnitude == ".inf" || magnitude == ".Inf" || magnitude == ".INF")
    return v[0] == '-' ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
  if (v == ".nan" || v == ".NaN" || v == ".NAN") return std::numeric_limits<double>::quiet_NaN();
  return s;
}

Result<nlohmann::json> ToJson(const YAML::Node& node, int depth);

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code
// points above U+10FFFF). JSON text is, and everything downstream (error
// messages that quote a value, the store) relies on it.
bool IsUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = byte(i);
    const size_t length = c < 0x80           ? 1
                          : (c >> 5) == 0x6  ? 2
                          : (c >> 4) == 0xE  ? 3
                          : (c >> 3) == 0x1E ? 4
                                             : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t code = length == 1 ? c : c & (0x7F >> length);
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return false;
      code = (code << 6) | (byte(i + k) & 0x3F);
    }
    constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      return false;
    i += length;
  }
  return true;
}

Result<nlohmann::json> ScalarToJson(const YAML::Node& node) {
  if (!IsUtf8(node.Scalar())) return YamlError(node.Mark(), "invalid UTF-8");
  const std::string& tag = node.Tag();
  if (tag == "?") return ResolvePlain(node.Scalar());
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return nlohmann::json(node.Scalar());
  return YamlError(node.Mark(), "unsupported tag '" + tag + "'");
}

Result<nlohmann::json> SequenceToJson(const YAML::Node& node, int depth) {
  nlohmann::json array = nlohmann::json::array();
  for (const YAML::Node& item : node) {
    Result<nlohmann::json> value = ToJson(item, depth + 1);
    if (!value.ok()) return value.status();
    array.push_back(std::move(value).value());
  }
  return array;
}

Result<nlohmann::json> MapToJson(const YAML::Node& node, int depth) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      return YamlError(entry.first.Mark(), "mapping keys must be scalars");
    if (!IsUtf8(entry.first.Scalar())) return YamlError(entry.first.Mark(), "invalid UTF-8");
    const std::string& key = entry.first.Scalar();
    if (object.contains(key)) return YamlError(entry.first.Mark(), "duplicate key '" + key + "'");
    Result<nlohmann::json> value = ToJson(entry.second, depth + 1);
    if (!value.ok()) return value.status();
    object[key] = std::move(value).value();
  }
  return object;
}

Result<nlohmann::json> ToJson(const YAML::Node& node, int depth) {
  if (depth > kMaxDepth) return YamlError(node.Mark(), "nested too deeply");
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence:
      return SequenceToJson(node, depth);
    case YAML::NodeType::Map:
      return MapToJson(node, depth);
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return nlohmann::json(nullptr);
}

// Notes whether a document had any content (anything but one null).
class ContentSeen final : public YAML::EventHandler {
 public:
  bool seen = false;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { seen = true; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {
    seen = true;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    seen = true;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    seen = true;
  }
  void OnMapEnd() override {}
};

// Whether a second document with content follows the first. yaml-cpp 0.7's
// LoadAll loops forever on some malformed input (its parser keeps reporting
// empty documents; fixed upstream in 2024, after Debian 12's version), so
// the documents are looked at with a bounded number of parser calls and
// empty ones after the first are ignored.
bool HasSecondDocument(std::string_view text) {
  std::istringstream stream{std::string(text)};
  YAML::Parser parser(stream);
  for (int document = 0; document < 2; ++document) {
    ContentSeen handler;
    if (!parser.HandleNextDocument(handler)) return false;
    if (document == 1) return handler.seen;
  }
  return false;
}

Result<nlohmann::json> ParseYaml(std::string_view text) {
  try {
    if (HasSecondDocument(text))
      return Status::InvalidArgument("invalid YAML: expected one document, found more");
    return ToJson(YAML::Load(std::string(text)), 0);
  } catch (const YAML::Exception& e) {
    return YamlError(e.mark, e.msg);
  }
}

}  // namespace

std::string JsonErrorMessage(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const size_t end = what.find("] ");
  return what.starts_with('[') && end != std::string::npos ? what.substr(end + 2) : what;
}

Result<nlohmann::json> ParseDocumentText(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return ParseJson(text);
  return ParseYaml(text);
}

}  // namespace berth::api
