#include "api/document.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/names.h"

namespace berth::api {
namespace {

// Where byte `offset` of `text` is, as "line L, column C" (1-based, columns
// in bytes).
std::string LineAndColumn(std::string_view text, size_t offset) {
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

// Checked first, so that every later message (which may quote the text) is
// valid UTF-8 too.
Status CheckUtf8(std::string_view text, const char* format) {
  const size_t bad = FindInvalidUtf8(text);
  if (bad == std::string_view::npos) return Status::Ok();
  return Status::InvalidArgument(std::string(format) + ": invalid UTF-8 at " +
                                 LineAndColumn(text, bad) + " (byte " + std::to_string(bad) + ")");
}

// The DocumentLimits checks both parsers share, one event at a time, so a
// parse stops at the first breach. Each check returns false after recording
// the error. (Duplicate keys each builder finds in the object it builds.)
class LimitsCheck {
 public:
  explicit LimitsCheck(const DocumentLimits& limits) : limits_(limits) {}

  // A value begins: an item of the enclosing list (an object's members are
  // counted by Key), and one more value in all.
  bool Value() {
    if (++values_ > limits_.max_values)
      return Fail("more than " + std::to_string(limits_.max_values) + " values in all");
    return open_.empty() || open_.back().is_object || Count();
  }
  bool String(std::string_view s) {
    if (s.size() <= limits_.max_string_bytes) return true;
    return Fail("a string longer than " + std::to_string(limits_.max_string_bytes) +
                " bytes: " + Quoted(s));
  }
  bool Open(bool is_object) {
    if (static_cast<int>(open_.size()) >= limits_.max_depth)
      return Fail("nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    open_.push_back({is_object, 0});
    return true;
  }
  // A member's key begins: an item of the enclosing object.
  bool Key(std::string_view key) { return String(key) && Count(); }
  void Close() {
    if (!open_.empty()) open_.pop_back();
  }
  bool Fail(std::string error) {
    error_ = std::move(error);
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  struct Container {
    bool is_object;
    size_t items;
  };
  bool Count() {
    if (++open_.back().items <= limits_.max_items) return true;
    return Fail("a list or object with more than " + std::to_string(limits_.max_items) + " items");
  }

  const DocumentLimits& limits_;
  std::vector<Container> open_;
  size_t values_ = 0;
  std::string error_;
};

// ---------------------------------------------------------------- JSON

// Builds the value from nlohmann's SAX events, each checked by LimitsCheck
// first, so nothing past a breach is built. Like nlohmann's own DOM builder,
// it keeps the path of open containers; a member's key is inserted into its
// object right away, which is also where a duplicate shows.
class BoundedJsonBuilder {
 public:
  using Json = nlohmann::json;
  BoundedJsonBuilder(Json& root, const DocumentLimits& limits) : root_(root), check_(limits) {}

  bool null() { return check_.Value() && Place(nullptr); }
  bool boolean(bool b) { return check_.Value() && Place(b); }
  bool number_integer(Json::number_integer_t n) { return check_.Value() && Place(n); }
  bool number_unsigned(Json::number_unsigned_t n) { return check_.Value() && Place(n); }
  bool number_float(Json::number_float_t n, const Json::string_t&) {
    return check_.Value() && Place(n);
  }
  bool string(Json::string_t& s) { return check_.Value() && check_.String(s) && Place(s); }
  bool binary(Json::binary_t&) { return check_.Fail("binary values are not JSON"); }
  bool start_object(std::size_t) {
    return check_.Value() && check_.Open(true) && Open(Json::object());
  }
  bool key(Json::string_t& k) {
    if (!check_.Key(k)) return false;
    auto [member, inserted] = open_.back()->get_ref<Json::object_t&>().try_emplace(k);
    if (!inserted) return check_.Fail("duplicate key " + Quoted(k));
    member_ = &member->second;
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) {
    return check_.Value() && check_.Open(false) && Open(Json::array());
  }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    return check_.Fail(JsonErrorMessage(e));
  }
  const std::string& error() const { return check_.error(); }

 private:
  // Puts `value` where the text is: the root, the member of the last key, or
  // the next item of the open list.
  Json* Place(Json value) {
    if (open_.empty()) return &(root_ = std::move(value));
    Json& parent = *open_.back();
    if (parent.is_object()) return &(*member_ = std::move(value));
    parent.push_back(std::move(value));
    return &parent.back();
  }
  bool Open(Json container) {
    open_.push_back(Place(std::move(container)));
    return true;
  }
  bool Close() {
    check_.Close();
    open_.pop_back();
    return true;
  }

  Json& root_;
  LimitsCheck check_;
  std::vector<Json*> open_;  // the containers being built, innermost last
  Json* member_ = nullptr;   // where the value of the last key goes
};

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

// YAML: ToJson walks yaml-cpp's node tree with a LimitsCheck (yaml-cpp's own
// parser stops at 500 levels, ParseYaml reports that as too deep; an alias is
// walked each time it is used, so the value budget bounds alias bombs).
Result<nlohmann::json> ToJson(const YAML::Node& node, LimitsCheck& check);

Status YamlLimitError(const YAML::Node& node, const LimitsCheck& check) {
  return YamlError(node.Mark(), check.error());
}

Result<nlohmann::json> ScalarToJson(const YAML::Node& node, LimitsCheck& check) {
  // Escapes such as "\ud800" can make invalid UTF-8 out of valid text.
  if (FindInvalidUtf8(node.Scalar()) != std::string_view::npos)
    return YamlError(node.Mark(), "invalid UTF-8");
  if (!check.String(node.Scalar())) return YamlLimitError(node, check);
  const std::string& tag = node.Tag();
  if (tag == "?") return ResolvePlain(node.Scalar());
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return nlohmann::json(node.Scalar());
  return YamlError(node.Mark(), "unsupported tag " + Quoted(tag));
}

Result<nlohmann::json> SequenceToJson(const YAML::Node& node, LimitsCheck& check) {
  nlohmann::json array = nlohmann::json::array();
  for (const YAML::Node& item : node) {
    Result<nlohmann::json> value = ToJson(item, check);
    if (!value.ok()) return value.status();
    array.push_back(std::move(value).value());
  }
  return array;
}

Result<nlohmann::json> MapToJson(const YAML::Node& node, LimitsCheck& check) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& entry : node) {
    if (!entry.first.IsScalar())
      return YamlError(entry.first.Mark(), "mapping keys must be scalars");
    const std::string& key = entry.first.Scalar();
    if (FindInvalidUtf8(key) != std::string_view::npos)
      return YamlError(entry.first.Mark(), "invalid UTF-8");
    if (!check.Key(key)) return YamlLimitError(entry.first, check);
    if (object.contains(key)) return YamlError(entry.first.Mark(), "duplicate key " + Quoted(key));
    Result<nlohmann::json> value = ToJson(entry.second, check);
    if (!value.ok()) return value.status();
    object[key] = std::move(value).value();
  }
  return object;
}

// A map or sequence opens a container in `check` around its items.
Result<nlohmann::json> ToJson(const YAML::Node& node, LimitsCheck& check) {
  if (!check.Value()) return YamlLimitError(node, check);
  const bool container = node.IsMap() || node.IsSequence();
  if (container && !check.Open(node.IsMap())) return YamlLimitError(node, check);
  Result<nlohmann::json> value = nlohmann::json(nullptr);
  if (node.IsScalar()) value = ScalarToJson(node, check);
  if (node.IsSequence()) value = SequenceToJson(node, check);
  if (node.IsMap()) value = MapToJson(node, check);
  if (container) check.Close();
  return value;
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

Result<nlohmann::json> ParseYaml(std::string_view text, const DocumentLimits& limits) {
  BERTH_RETURN_IF_ERROR(CheckUtf8(text, "invalid YAML"));
  try {
    if (HasSecondDocument(text))
      return Status::InvalidArgument("invalid YAML: expected one document, found more");
    LimitsCheck check(limits);
    return ToJson(YAML::Load(std::string(text)), check);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp stops at 500 levels with the message "bad file".
    return YamlError(e.mark, "nested deeper than " + std::to_string(limits.max_depth) + " levels");
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

Result<std::string> ReadDocumentFile(const std::string& path, std::istream& standard_input,
                                     size_t max_bytes) {
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file)
      return Status::InvalidArgument("cannot read '" + path + "': " + std::strerror(errno));
  }
  std::istream& in = path == "-" ? standard_input : file;
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes)
      return Status::InvalidArgument("'" + path + "' is larger than " + std::to_string(max_bytes) +
                                     " bytes");
  }
  if (in.bad())  // a directory opens, and then fails to read (EISDIR)
    return Status::InvalidArgument("cannot read '" + path + "': " + std::strerror(errno));
  return text;
}

Result<nlohmann::json> ParseJsonText(std::string_view text, const DocumentLimits& limits) {
  BERTH_RETURN_IF_ERROR(CheckUtf8(text, "invalid JSON"));
  nlohmann::json doc;
  BoundedJsonBuilder builder(doc, limits);
  try {
    if (nlohmann::json::sax_parse(text.begin(), text.end(), &builder)) return doc;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument("invalid JSON: " + JsonErrorMessage(e));
  }
  return Status::InvalidArgument("invalid JSON: " + builder.error());
}

Result<nlohmann::json> ParseDocumentText(std::string_view text, const DocumentLimits& limits) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '['))
    return ParseJsonText(text, limits);
  return ParseYaml(text, limits);
}

}  // namespace berth::api
