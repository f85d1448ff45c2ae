// Constraint expressions: "key==value" / "key!=value", parsed and matched
// exactly as docs/placement.md ("Constraint expressions") says.
//
// Parse once when a service or task is submitted (errors are shown to the
// user); match many times in the scheduling loop, so a parsed Constraint
// carries everything that does not depend on the node (which key, the label
// name, the parsed IP or CIDR). Plain values; safe to share between threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/node.h"
#include "core/status.h"

namespace berth::constraint {

enum class Op { kEqual, kNotEqual };

// Which property of the node a key selects.
enum class Key {
  kNodeId,
  kNodeHostname,
  kNodeRole,
  kNodeIp,
  kPlatformOs,
  kPlatformArch,
  kNodeLabel,    // node.labels.<label>
  kEngineLabel,  // engine.labels.<label>
  kUnknown,      // any other key: fails for both operators
};

struct Constraint {
  std::string key;  // as written, trimmed
  Op op = Op::kEqual;
  std::string value;  // as written, trimmed
  Key kind = Key::kUnknown;
  std::string label;  // for kNodeLabel / kEngineLabel: the case-sensitive label name
  // For kNodeIp: the value as a 16-byte address (IPv4 mapped into IPv6) and a
  // prefix length in bits (128 for a plain address); ip_valid false when the
  // value is neither an IP nor a CIDR (then both operators fail).
  bool ip_valid = false;
  std::array<uint8_t, 16> ip{};
  int prefix_bits = 128;
};

// Parses one expression. `==` is looked for first, then `!=`. Errors, exactly:
//   key '<k>' is invalid / value '<v>' is invalid /
//   constraint expected one operator from ==, !=
Result<Constraint> Parse(std::string_view expression);

// Parses several expressions (ANDed); the first error wins.
Result<std::vector<Constraint>> ParseAll(const std::vector<std::string>& expressions);

// Whether the node satisfies the constraint. Values compare case-insensitively
// and as whole strings; a missing label or hostname counts as "".
bool Matches(const Constraint& constraint, const Node& node);

// Whether the node satisfies every constraint.
bool MatchesAll(const std::vector<Constraint>& constraints, const Node& node);

// Parses an IPv4 or IPv6 address into 16 bytes (IPv4 mapped into IPv6).
bool ParseIp(std::string_view text, std::array<uint8_t, 16>* out);

}  // namespace berth::constraint
