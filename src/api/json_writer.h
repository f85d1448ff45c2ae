// Writing JSON text directly, for the few answers too large or too hot to
// build as a nlohmann::json first (a stored task's body in the control
// loop, the dashboard's snapshot). Escapes as nlohmann::json's dump does;
// the text written is valid UTF-8 when the strings given are (berthd's
// stored bodies are: the API parses them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace berth::api {

// Appends `text` as a JSON string.
void AppendJsonString(std::string& out, std::string_view text);

// Writes `"key":value` pairs of one object, separated by commas, in the
// order called; the braces come with its life.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
  ~ObjectWriter() { out_ += '}'; }
  ObjectWriter(const ObjectWriter&) = delete;
  ObjectWriter& operator=(const ObjectWriter&) = delete;

  // Leaves out an empty `value`.
  void Text(const char* key, std::string_view value) {
    if (!value.empty()) String(key, value);
  }
  void String(const char* key, std::string_view value) {
    Key(key);
    AppendJsonString(out_, value);
  }
  void Number(const char* key, int64_t value) {
    Key(key);
    out_ += std::to_string(value);
  }
  void Bool(const char* key, bool value) {
    Key(key);
    out_ += value ? "true" : "false";
  }
  // `key`: a constant that needs no escapes.
  void Key(const char* key) {
    out_ += first_ ? "\"" : ",\"";
    first_ = false;
    out_ += key;
    out_ += "\":";
  }
  // A key from data (a label, an id): escaped.
  void DataKey(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    AppendJsonString(out_, key);
    out_ += ':';
  }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace berth::api
