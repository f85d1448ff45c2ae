// Resource amounts as integers: milli-CPU, bytes, and generic resources.
//
// Integers everywhere so that reservations add and subtract exactly. A node's
// generic resources are either a discrete count ("gpu": 4) or a set of named
// instances ("gpu": ["GPU-a", "GPU-b"]); a task may only request counts, and a
// count against a named set takes that many names. Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace berth {

// One kind of generic resource on a node.
struct NodeGenericResource {
  std::string kind;
  bool named = false;              // true: `names` holds the instances; false: `count` does
  int64_t count = 0;               // discrete amount (unused when named)
  std::vector<std::string> names;  // named instances, kept sorted (used when named)

  friend bool operator==(const NodeGenericResource&, const NodeGenericResource&) = default;
};

struct NodeResources {
  int64_t milli_cpu = 0;
  int64_t memory_bytes = 0;
  std::vector<NodeGenericResource> generic;  // at most one entry per kind

  friend bool operator==(const NodeResources&, const NodeResources&) = default;
};

// A task's request for `count` units of one generic kind.
struct GenericRequest {
  std::string kind;
  int64_t count = 0;

  friend bool operator==(const GenericRequest&, const GenericRequest&) = default;
};

struct Reservations {
  int64_t milli_cpu = 0;
  int64_t memory_bytes = 0;
  std::vector<GenericRequest> generic;  // at most one entry per kind

  bool empty() const { return milli_cpu == 0 && memory_bytes == 0 && generic.empty(); }
  friend bool operator==(const Reservations&, const Reservations&) = default;
};

// A named generic instance a task took on its node, e.g. {"gpu", "GPU-a"}.
struct GenericClaim {
  std::string kind;
  std::string name;

  friend bool operator==(const GenericClaim&, const GenericClaim&) = default;
};

}  // namespace berth
