// Constraint parsing and matching; see constraint.h and docs/placement.md
// ("Constraint expressions").
//
// The key and value character rules are SwarmKit's (its `alphaNumeric` and
// `valuePattern` regular expressions), written out by hand so that the hot
// matching path and the parser need no regex engine.
#include "constraint/constraint.h"

#include <arpa/inet.h>

#include <cstring>
#include <string>
#include <utility>

#include "core/ascii.h"

namespace berth::constraint {
namespace {

// What Go's strings.TrimSpace removes, restricted to ASCII.
constexpr std::string_view kTrimmed = " \t\n\v\f\r";

constexpr std::string_view kNodeLabelsPrefix = "node.labels.";
constexpr std::string_view kEngineLabelsPrefix = "engine.labels.";

std::string_view Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(kTrimmed);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(kTrimmed);
  return text.substr(first, last - first + 1);
}

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// SwarmKit: ^(?i)[a-z_][a-z0-9\-_.]+$ -- so a key has at least two characters.
bool IsValidKey(std::string_view key) {
  if (key.size() < 2) return false;
  if (!IsLetter(key[0]) && key[0] != '_') return false;
  for (char c : key.substr(1))
    if (!IsLetter(c) && !IsDigit(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// SwarmKit: ^(?i)[a-z0-9:\-_\s\.\*\(\)\?\+\[\]\\\^\$\|\/]+$ where Go's \s is
// [\t\n\f\r ] (no vertical tab).
bool IsValidValue(std::string_view value) {
  static constexpr std::string_view kSpecial = ":-_.*()?+[]\\^$|/\t\n\f\r ";
  if (value.empty()) return false;
  for (char c : value)
    if (!IsLetter(c) && !IsDigit(c) && kSpecial.find(c) == std::string_view::npos) return false;
  return true;
}

Key ClassifyKey(std::string_view key, std::string* label) {
  struct Fixed {
    std::string_view name;
    Key kind;
  };
  static constexpr Fixed kFixed[] = {
      {"node.id", Key::kNodeId},
      {"node.hostname", Key::kNodeHostname},
      {"node.role", Key::kNodeRole},
      {"node.ip", Key::kNodeIp},
      {"node.platform.os", Key::kPlatformOs},
      {"node.platform.arch", Key::kPlatformArch},
  };
  for (const Fixed& fixed : kFixed)
    if (EqualsIgnoreCase(key, fixed.name)) return fixed.kind;
  // The label name keeps its case: labels are case-sensitive map keys. A bare
  // prefix names no label, so it is an unknown key rather than the label "".
  if (key.size() > kNodeLabelsPrefix.size() && StartsWithIgnoreCase(key, kNodeLabelsPrefix)) {
    *label = std::string(key.substr(kNodeLabelsPrefix.size()));
    return Key::kNodeLabel;
  }
  if (key.size() > kEngineLabelsPrefix.size() && StartsWithIgnoreCase(key, kEngineLabelsPrefix)) {
    *label = std::string(key.substr(kEngineLabelsPrefix.size()));
    return Key::kEngineLabel;
  }
  return Key::kUnknown;
}

bool ParseIpv4(const std::string& text, std::array<uint8_t, 16>* out) {
  uint8_t v4[4];
  if (inet_pton(AF_INET, text.c_str(), v4) != 1) return false;
  // ::ffff:a.b.c.d, so that IPv4 and IPv4-mapped IPv6 spellings compare equal.
  out->fill(0);
  (*out)[10] = 0xff;
  (*out)[11] = 0xff;
  std::memcpy(out->data() + 12, v4, 4);
  return true;
}

bool ParseIpv6(const std::string& text, std::array<uint8_t, 16>* out) {
  return inet_pton(AF_INET6, text.c_str(), out->data()) == 1;
}

// Decimal prefix length in [0, max]; digits only, so no sign and no spaces.
bool ParsePrefixBits(std::string_view text, int max, int* bits) {
  if (text.empty()) return false;
  int value = 0;
  for (char c : text) {
    if (!IsDigit(c)) return false;
    value = value * 10 + (c - '0');
    if (value > max) return false;  // also keeps long inputs from overflowing
  }
  *bits = value;
  return true;
}

// Fills ip / prefix_bits from a plain address or "addr/bits"; anything else
// leaves ip_valid false so that the constraint fails for both operators.
void ParseIpValue(Constraint* c) {
  const std::string_view value = c->value;
  const size_t slash = value.find('/');
  const std::string address(value.substr(0, slash));
  std::array<uint8_t, 16> ip{};
  const bool is_v4 = ParseIpv4(address, &ip);
  if (!is_v4 && !ParseIpv6(address, &ip)) return;
  int bits = 128;
  if (slash != std::string_view::npos) {
    if (!ParsePrefixBits(value.substr(slash + 1), is_v4 ? 32 : 128, &bits)) return;
    if (is_v4) bits += 96;  // the IPv4 bits follow the 96-bit ::ffff: prefix
  }
  c->ip = ip;
  c->prefix_bits = bits;
  c->ip_valid = true;
}

// Whether the first `bits` bits of a and b agree.
bool SamePrefix(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, int bits) {
  const int whole = bits / 8;
  for (int i = 0; i < whole; ++i)
    if (a[i] != b[i]) return false;
  const int rest = bits % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[whole] & mask) == (b[whole] & mask);
}

bool IpMatches(const Constraint& c, const Node& node) {
  if (!c.ip_valid) return false;
  std::array<uint8_t, 16> address{};
  // A node without a usable address is simply not that IP / not in that range.
  const bool inside = ParseIp(node.address, &address) && SamePrefix(c.ip, address, c.prefix_bits);
  return inside == (c.op == Op::kEqual);
}

std::string_view LabelOrEmpty(const Labels& labels, const std::string& name) {
  const auto it = labels.find(name);
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

std::string_view PlatformOs(const Node& node) {
  return node.platform ? std::string_view(node.platform->os) : std::string_view();
}

std::string_view PlatformArch(const Node& node) {
  return node.platform ? std::string_view(node.platform->arch) : std::string_view();
}

// The node's value for a string-compared key.
std::string_view NodeValue(const Constraint& c, const Node& node) {
  switch (c.kind) {
    case Key::kNodeId:
      return node.id;
    case Key::kNodeHostname:
      return node.hostname;
    case Key::kNodeRole:
      return ToString(node.role);
    case Key::kPlatformOs:
      return PlatformOs(node);
    case Key::kPlatformArch:
      return PlatformArch(node);
    case Key::kNodeLabel:
      return LabelOrEmpty(node.labels, c.label);
    case Key::kEngineLabel:
      return LabelOrEmpty(node.engine_labels, c.label);
    case Key::kNodeIp:
    case Key::kUnknown:
      break;
  }
  return {};
}

}  // namespace

bool ParseIp(std::string_view text, std::array<uint8_t, 16>* out) {
  const std::string copy(text);  // inet_pton needs a terminated string
  return ParseIpv4(copy, out) || ParseIpv6(copy, out);
}

Result<Constraint> Parse(std::string_view expression) {
  Op op = Op::kEqual;
  size_t at = expression.find("==");
  if (at == std::string_view::npos) {
    op = Op::kNotEqual;
    at = expression.find("!=");
  }
  if (at == std::string_view::npos)
    return Status::InvalidArgument("constraint expected one operator from ==, !=");

  const std::string_view key = Trim(expression.substr(0, at));
  if (!IsValidKey(key)) return Status::InvalidArgument("key '" + std::string(key) + "' is invalid");
  const std::string_view value = Trim(expression.substr(at + 2));
  if (!IsValidValue(value))
    return Status::InvalidArgument("value '" + std::string(value) + "' is invalid");

  Constraint c;
  c.key = std::string(key);
  c.op = op;
  c.value = std::string(value);
  c.kind = ClassifyKey(key, &c.label);
  if (c.kind == Key::kNodeIp) ParseIpValue(&c);
  return c;
}

Result<std::vector<Constraint>> ParseAll(const std::vector<std::string>& expressions) {
  std::vector<Constraint> parsed;
  parsed.reserve(expressions.size());
  for (const std::string& expression : expressions) {
    Result<Constraint> c = Parse(expression);
    if (!c.ok()) return c.status();
    parsed.push_back(std::move(c).value());
  }
  return parsed;
}

bool Matches(const Constraint& constraint, const Node& node) {
  if (constraint.kind == Key::kUnknown) return false;
  if (constraint.kind == Key::kNodeIp) return IpMatches(constraint, node);
  const bool equal = EqualsIgnoreCase(NodeValue(constraint, node), constraint.value);
  return equal == (constraint.op == Op::kEqual);
}

bool MatchesAll(const std::vector<Constraint>& constraints, const Node& node) {
  for (const Constraint& c : constraints)
    if (!Matches(c, node)) return false;
  return true;
}

}  // namespace berth::constraint
