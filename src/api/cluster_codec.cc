#include "api/cluster_codec.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "api/process_codec.h"
#include "constraint/constraint.h"
#include "core/ascii.h"
#include "core/names.h"

namespace berth::api {
namespace {

// ------------------------------------------------------------- shared parts

Status ReadPlatform(const Json& value, const std::string& path, Platform* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"os", "arch"}));
  Platform platform;
  BERTH_RETURN_IF_ERROR(ReadField(value, "os", path, ReadText, &platform.os));
  BERTH_RETURN_IF_ERROR(ReadField(value, "arch", path, ReadText, &platform.arch));
  *out = std::move(platform);
  return Status::Ok();
}

Status ReadPositiveCount(const Json& value, const std::string& path, int64_t* out) {
  uint64_t count = 0;
  BERTH_RETURN_IF_ERROR(ReadUnsigned(value, path, &count));
  if (count == 0 || count > static_cast<uint64_t>(INT64_MAX))
    return FieldError(path, "expected a positive count, got " + value.dump());
  *out = static_cast<int64_t>(count);
  return Status::Ok();
}

// A generic resource kind is an id (a key of `path`'s object).
Status CheckGenericKind(const std::string& kind, const std::string& path) {
  if (Status valid = CheckId(kind); !valid.ok())
    return FieldError(path, "generic resource kind: " + valid.message());
  return Status::Ok();
}

// ------------------------------------------------------------------- nodes

Status ReadGenericNames(const Json& value, const std::string& path, std::vector<std::string>* out) {
  std::vector<std::string> names;
  BERTH_RETURN_IF_ERROR(ReadList(value, path, ReadId, &names));
  if (names.empty()) return FieldError(path, "expected at least one name");
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i)
    if (!seen.insert(names[i]).second)
      return FieldError(IndexPath(path, i), "duplicate name " + Quoted(names[i]));
  std::sort(names.begin(), names.end());
  *out = std::move(names);
  return Status::Ok();
}

Status ReadNodeGenericOne(const Json& value, const std::string& path, NodeGenericResource* out) {
  if (value.is_array()) {
    out->named = true;
    return ReadGenericNames(value, path, &out->names);
  }
  if (!value.is_number()) return TypeError(value, path, "a positive count or a list of names");
  return ReadPositiveCount(value, path, &out->count);
}

Status ReadNodeGeneric(const Json& value, const std::string& path,
                       std::vector<NodeGenericResource>* out) {
  if (!value.is_object()) return TypeError(value, path, "an object of generic resources");
  std::vector<NodeGenericResource> generic;
  for (const auto& [kind, amount] : value.items()) {
    BERTH_RETURN_IF_ERROR(CheckGenericKind(kind, path));
    generic.emplace_back();
    generic.back().kind = kind;
    BERTH_RETURN_IF_ERROR(ReadNodeGenericOne(amount, FieldPath(path, kind), &generic.back()));
  }
  *out = std::move(generic);
  return Status::Ok();
}

Status ReadNodeResources(const Json& value, const std::string& path, NodeResources* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"cpu", "memory", "generic"}));
  NodeResources resources;
  BERTH_RETURN_IF_ERROR(ReadField(value, "cpu", path, ReadMilliCpu, &resources.milli_cpu));
  BERTH_RETURN_IF_ERROR(ReadField(value, "memory", path, ReadBytes, &resources.memory_bytes));
  BERTH_RETURN_IF_ERROR(ReadField(value, "generic", path, ReadNodeGeneric, &resources.generic));
  *out = std::move(resources);
  return Status::Ok();
}

Status ReadPlugin(const Json& value, const std::string& path, PluginRef* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"type", "name"}));
  BERTH_RETURN_IF_ERROR(RequireField(value, "type", path, ReadName, &out->type));
  return RequireField(value, "name", path, ReadName, &out->name);
}

Status ReadPlugins(const Json& value, const std::string& path, std::vector<PluginRef>* out) {
  return ReadList(value, path, ReadPlugin, out);
}

Status ReadAddress(const Json& value, const std::string& path, std::string* out) {
  std::string address;
  BERTH_RETURN_IF_ERROR(ReadText(value, path, &address));
  std::array<uint8_t, 16> ip{};
  if (!address.empty() && !constraint::ParseIp(address, &ip))
    return FieldError(path, "invalid IP address " + Quoted(address));
  *out = std::move(address);
  return Status::Ok();
}

Status ReadOptionalPlatform(const Json& value, const std::string& path,
                            std::optional<Platform>* out) {
  Platform platform;
  BERTH_RETURN_IF_ERROR(ReadPlatform(value, path, &platform));
  *out = std::move(platform);
  return Status::Ok();
}

// --------------------------------------------------------------- templates

Status ReadGenericRequests(const Json& value, const std::string& path,
                           std::vector<GenericRequest>* out) {
  if (!value.is_object()) return TypeError(value, path, "an object of generic resources");
  std::vector<GenericRequest> requests;
  for (const auto& [kind, amount] : value.items()) {
    BERTH_RETURN_IF_ERROR(CheckGenericKind(kind, path));
    const std::string kind_path = FieldPath(path, kind);
    if (!amount.is_number())
      return TypeError(amount, kind_path,
                       "a positive count (a task requests an amount, not names)");
    requests.emplace_back();
    requests.back().kind = kind;
    BERTH_RETURN_IF_ERROR(ReadPositiveCount(amount, kind_path, &requests.back().count));
  }
  *out = std::move(requests);
  return Status::Ok();
}

Status ReadReservations(const Json& value, const std::string& path, Reservations* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"cpu", "memory", "generic"}));
  Reservations r;
  BERTH_RETURN_IF_ERROR(ReadField(value, "cpu", path, ReadMilliCpu, &r.milli_cpu));
  BERTH_RETURN_IF_ERROR(ReadField(value, "memory", path, ReadBytes, &r.memory_bytes));
  BERTH_RETURN_IF_ERROR(ReadField(value, "generic", path, ReadGenericRequests, &r.generic));
  *out = std::move(r);
  return Status::Ok();
}

// A constraint names a label key and compares with a label value.
constexpr size_t kMaxConstraintBytes = kMaxLabelKeyBytes + kMaxLabelValueBytes + 32;

Status ReadConstraint(const Json& value, const std::string& path, std::string* out) {
  BERTH_RETURN_IF_ERROR(ReadTextUpTo(value, path, kMaxConstraintBytes, out));
  return out->empty() ? FieldError(path, "must not be empty") : Status::Ok();
}

Status ReadConstraints(const Json& value, const std::string& path, std::vector<std::string>* out) {
  std::vector<std::string> expressions;
  BERTH_RETURN_IF_ERROR(ReadList(value, path, ReadConstraint, &expressions));
  for (size_t i = 0; i < expressions.size(); ++i) {
    Result<constraint::Constraint> parsed = constraint::Parse(expressions[i]);
    if (!parsed.ok()) return FieldError(IndexPath(path, i), parsed.status().message());
  }
  *out = std::move(expressions);
  return Status::Ok();
}

// "node.labels.<K>", "engine.labels.<K>" (prefix in any case, as in
// constraints) or "node.id"; anything else would be ignored by the tree, so
// it is an error.
Status ReadPreferenceDescriptor(const Json& value, const std::string& path, std::string* out) {
  std::string descriptor;
  BERTH_RETURN_IF_ERROR(ReadString(value, path, &descriptor));
  if (EqualsIgnoreCase(descriptor, "node.id")) {
    *out = "node.id";
    return Status::Ok();
  }
  for (std::string_view prefix : {"node.labels.", "engine.labels."}) {
    if (descriptor.size() > prefix.size() && StartsWithIgnoreCase(descriptor, prefix)) {
      const std::string label = descriptor.substr(prefix.size());
      if (Status valid = CheckLabelKey(label); !valid.ok())
        return FieldError(path, valid.message());
      *out = std::string(prefix) + label;
      return Status::Ok();
    }
  }
  return FieldError(path, "unsupported descriptor " + Quoted(descriptor) +
                              " (expected node.labels.<label>, engine.labels.<label> or node.id)");
}

// {"<value>": weight, ..., "*": weight for every other value}: whole numbers
// 0..1000000, at least one above 0.
Status ReadWeights(const Json& value, const std::string& path, PlacementPreference* out) {
  if (!value.is_object() || value.empty())
    return FieldError(path, "expected an object of label value -> weight, got " + Brief(value));
  bool some_weight = false;
  for (const auto& [label_value, weight_json] : value.items()) {
    const std::string at = FieldPath(path, label_value);
    uint64_t weight = 0;
    if (!ReadUnsigned(weight_json, at, &weight).ok() || weight > 1000000)
      return FieldError(at, "expected a weight 0..1000000, got " + Brief(weight_json));
    some_weight = some_weight || weight > 0;
    if (label_value == "*") {
      out->other_weight = static_cast<uint32_t>(weight);
    } else {
      if (Status valid = CheckLabelValue(label_value); !valid.ok())
        return FieldError(at, valid.message());
      out->weights.emplace_back(label_value, static_cast<uint32_t>(weight));
    }
  }
  if (!some_weight) return FieldError(path, "at least one weight must be above 0");
  std::sort(out->weights.begin(), out->weights.end());
  return Status::Ok();
}

// One entry of "preferences": {"spread": D[, "weights": {...}]}, {"pack": D}
// or {"prefer": "<constraint>"} (a soft constraint).
struct PreferenceEntry {
  std::optional<PlacementPreference> level;
  std::string prefer;
};

Status ReadPreference(const Json& value, const std::string& path, PreferenceEntry* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"spread", "pack", "prefer", "weights"}));
  const int kinds = value.contains("spread") + value.contains("pack") + value.contains("prefer");
  if (kinds != 1) return FieldError(path, "expected exactly one of 'spread', 'pack', 'prefer'");
  if (value.contains("weights") && !value.contains("spread"))
    return FieldError(path, "'weights' goes only with 'spread'");
  if (value.contains("prefer")) {
    const std::string at = FieldPath(path, "prefer");
    BERTH_RETURN_IF_ERROR(ReadConstraint(value["prefer"], at, &out->prefer));
    Result<constraint::Constraint> parsed = constraint::Parse(out->prefer);
    return parsed.ok() ? Status::Ok() : FieldError(at, parsed.status().message());
  }
  PlacementPreference level;
  level.kind = value.contains("pack") ? PlacementPreference::Kind::kPack
                                      : PlacementPreference::Kind::kSpread;
  BERTH_RETURN_IF_ERROR(RequireField(value, value.contains("pack") ? "pack" : "spread", path,
                                     ReadPreferenceDescriptor, &level.descriptor));
  if (value.contains("weights")) {
    if (level.IsNodeId()) return FieldError(path, "a spread over node.id takes no weights");
    BERTH_RETURN_IF_ERROR(ReadWeights(value["weights"], FieldPath(path, "weights"), &level));
  }
  out->level = std::move(level);
  return Status::Ok();
}

// Levels keep their order; node.id, the order within a leaf, only last.
Status ReadPreferences(const Json& value, const std::string& path, TaskSpec* spec) {
  std::vector<PreferenceEntry> entries;
  BERTH_RETURN_IF_ERROR(ReadList(value, path, ReadPreference, &entries));
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].level) {
      spec->preferred_constraints.push_back(std::move(entries[i].prefer));
      continue;
    }
    if (!spec->preferences.empty() && spec->preferences.back().IsNodeId())
      return FieldError(IndexPath(path, i),
                        "a preference over node.id must be the last spread or pack");
    spec->preferences.push_back(std::move(*entries[i].level));
  }
  return Status::Ok();
}

// {"service": ID, "anti": bool, "soft": bool}; anti and soft default false.
Status ReadAffinity(const Json& value, const std::string& path, ServiceAffinity* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"service", "anti", "soft"}));
  BERTH_RETURN_IF_ERROR(RequireField(value, "service", path, ReadId, &out->service));
  BERTH_RETURN_IF_ERROR(ReadField(value, "anti", path, ReadBool, &out->anti));
  return ReadField(value, "soft", path, ReadBool, &out->soft);
}

Status ReadAffinities(const Json& value, const std::string& path,
                      std::vector<ServiceAffinity>* out) {
  return ReadList(value, path, ReadAffinity, out);
}

Status ReadNames(const Json& value, const std::string& path, std::vector<std::string>* out) {
  return ReadList(value, path, ReadName, out);
}

Status ReadPlatforms(const Json& value, const std::string& path, std::vector<Platform>* out) {
  return ReadList(value, path, ReadPlatform, out);
}

Status ReadPortNumber(const Json& value, const std::string& path, uint16_t* out) {
  uint64_t port = 0;
  if (!ReadUnsigned(value, path, &port).ok() || port == 0 || port > 65535)
    return FieldError(path, "expected a port number 1..65535, got " + Brief(value));
  *out = static_cast<uint16_t>(port);
  return Status::Ok();
}

Status ReadPortMode(const Json& value, const std::string& path, bool* host_mode) {
  std::string mode;
  BERTH_RETURN_IF_ERROR(ReadString(value, path, &mode));
  if (mode != "host" && mode != "ingress")
    return FieldError(path,
                      "invalid port mode " + Quoted(mode) + " (expected one of host, ingress)");
  *host_mode = mode == "host";
  return Status::Ok();
}

Status ReadPort(const Json& value, const std::string& path, PortSpec* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"protocol", "published", "target", "mode"}));
  PortSpec port;
  uint16_t target = 0;  // accepted for familiarity; placement ignores it
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "protocol", path, EnumReader(ParseProtocol), &port.protocol));
  BERTH_RETURN_IF_ERROR(ReadField(value, "published", path, ReadPortNumber, &port.published));
  BERTH_RETURN_IF_ERROR(ReadField(value, "target", path, ReadPortNumber, &target));
  BERTH_RETURN_IF_ERROR(ReadField(value, "mode", path, ReadPortMode, &port.host_mode));
  if (port.published == 0 && target == 0)
    return FieldError(path, "a port needs 'published' or 'target'");
  *out = port;
  return Status::Ok();
}

Status ReadPorts(const Json& value, const std::string& path, std::vector<PortSpec>* out) {
  std::vector<PortSpec> ports;
  BERTH_RETURN_IF_ERROR(ReadList(value, path, ReadPort, &ports));
  std::set<uint32_t> published;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].published != 0 && !published.insert(ports[i].Key()).second)
      return FieldError(IndexPath(path, i), "duplicate published port " +
                                                std::string(ToString(ports[i].protocol)) + "/" +
                                                std::to_string(ports[i].published));
  }
  *out = std::move(ports);
  return Status::Ok();
}

}  // namespace

Status DecodeNode(const Json& value, const std::string& path, Node* node) {
  BERTH_RETURN_IF_ERROR(CheckObject(
      value, path,
      {"id", "hostname", "role", "state", "availability", "platform", "resources", "labels",
       "engine_labels", "plugins", "address", "limits_enforced", "pids_limit_enforced"}));
  Node n;
  BERTH_RETURN_IF_ERROR(RequireField(value, "id", path, ReadId, &n.id));
  BERTH_RETURN_IF_ERROR(ReadField(value, "hostname", path, ReadText, &n.hostname));
  BERTH_RETURN_IF_ERROR(ReadField(value, "role", path, EnumReader(ParseNodeRole), &n.role));
  BERTH_RETURN_IF_ERROR(ReadField(value, "state", path, EnumReader(ParseNodeState), &n.state));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "availability", path, EnumReader(ParseNodeAvailability), &n.availability));
  BERTH_RETURN_IF_ERROR(ReadField(value, "platform", path, ReadOptionalPlatform, &n.platform));
  BERTH_RETURN_IF_ERROR(ReadField(value, "resources", path, ReadNodeResources, &n.resources));
  BERTH_RETURN_IF_ERROR(ReadField(value, "labels", path, ReadLabels, &n.labels));
  BERTH_RETURN_IF_ERROR(ReadField(value, "engine_labels", path, ReadLabels, &n.engine_labels));
  BERTH_RETURN_IF_ERROR(ReadField(value, "plugins", path, ReadPlugins, &n.plugins));
  BERTH_RETURN_IF_ERROR(ReadField(value, "address", path, ReadAddress, &n.address));
  if (value.contains("limits_enforced")) {
    BERTH_RETURN_IF_ERROR(ReadBool(value["limits_enforced"], FieldPath(path, "limits_enforced"),
                                   &n.limits_enforced.emplace()));
  }
  if (value.contains("pids_limit_enforced")) {
    BERTH_RETURN_IF_ERROR(ReadBool(value["pids_limit_enforced"],
                                   FieldPath(path, "pids_limit_enforced"),
                                   &n.pids_limit_enforced.emplace()));
  }
  *node = std::move(n);
  return Status::Ok();
}

Result<std::vector<Node>> DecodeNodeList(const Json& doc) {
  BERTH_RETURN_IF_ERROR(CheckObject(doc, "", {"nodes"}));
  if (!doc.contains("nodes")) return FieldError("", "missing field 'nodes'");
  std::vector<Node> nodes;
  BERTH_RETURN_IF_ERROR(ReadList(doc["nodes"], "nodes", DecodeNode, &nodes));
  std::set<std::string_view> ids;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!ids.insert(nodes[i].id).second)
      return FieldError(IndexPath("nodes", i), "node id " + Quoted(nodes[i].id) + " is used twice");
  return nodes;
}

Status DecodeTaskSpec(const Json& value, const std::string& path, TaskSpec* spec) {
  BERTH_RETURN_IF_ERROR(
      CheckObject(value, path,
                  {"resources", "constraints", "preferences", "affinity", "platforms", "ports",
                   "max_replicas_per_node", "networks", "volume_drivers", "log_driver",
                   // how a berth-node runs it (process_codec.h), not for placement
                   "command", "args", "env", "workdir", "stop_grace_period", "limits"}));
  std::optional<executor::ProcessSpec> process;
  BERTH_RETURN_IF_ERROR(DecodeProcessSpec(value, path, &process));
  TaskSpec s;
  BERTH_RETURN_IF_ERROR(ReadField(value, "resources", path, ReadReservations, &s.reservations));
  BERTH_RETURN_IF_ERROR(ReadField(value, "constraints", path, ReadConstraints, &s.constraints));
  BERTH_RETURN_IF_ERROR(ReadField(value, "preferences", path, ReadPreferences, &s));
  BERTH_RETURN_IF_ERROR(ReadField(value, "affinity", path, ReadAffinities, &s.affinities));
  // The engine tells soft rules apart in a 32-bit mask (scheduler.cc).
  const size_t soft_rules =
      s.preferred_constraints.size() +
      std::count_if(s.affinities.begin(), s.affinities.end(), [](const auto& a) { return a.soft; });
  if (soft_rules > 32)
    return FieldError(path,
                      "at most 32 soft rules ('prefer' preferences and soft affinities), got " +
                          std::to_string(soft_rules));
  BERTH_RETURN_IF_ERROR(ReadField(value, "platforms", path, ReadPlatforms, &s.platforms));
  BERTH_RETURN_IF_ERROR(ReadField(value, "ports", path, ReadPorts, &s.ports));
  BERTH_RETURN_IF_ERROR(
      ReadField(value, "max_replicas_per_node", path, ReadUnsigned, &s.max_replicas_per_node));
  BERTH_RETURN_IF_ERROR(ReadField(value, "networks", path, ReadNames, &s.networks));
  BERTH_RETURN_IF_ERROR(ReadField(value, "volume_drivers", path, ReadNames, &s.volume_drivers));
  BERTH_RETURN_IF_ERROR(ReadField(value, "log_driver", path, ReadText, &s.log_driver));
  s.has_limits = process && process->HasLimits();
  s.has_pids_limit = process && process->limit_pids;
  *spec = std::move(s);
  return Status::Ok();
}

Status RefuseIngressPorts(const Json& task, const std::string& path) {
  if (!task.is_object() || !task.contains("ports") || !task["ports"].is_array())
    return Status::Ok();
  const Json& ports = task["ports"];
  for (size_t i = 0; i < ports.size(); ++i) {
    const Json& port = ports[i];
    if (!port.is_object() || port.value("mode", Json("ingress")) != "ingress") continue;
    // The flag that publishes the same port in host mode.
    std::string flag = "mode=host";
    for (const char* number : {"target", "published"})
      if (port.contains(number) && port[number].is_number_integer())
        flag += std::string(",") + number + "=" + std::to_string(port[number].get<int64_t>());
    if (port.contains("protocol") && port["protocol"].is_string() && port["protocol"] != "tcp")
      flag += ",protocol=" + port["protocol"].get<std::string>();
    const std::string published =
        port.contains("published") && port["published"].is_number_integer()
            ? "port " + std::to_string(port["published"].get<int64_t>())
            : "a published port";
    return FieldError(
        FieldPath(IndexPath(FieldPath(path, "ports"), i), "mode"),
        std::string(port.contains("mode") ? "ingress mode" : "ingress mode (the default)") +
            " publishes through a routing mesh, which Berth does not have: nothing would "
            "listen on " +
            published +
            " or route it to the tasks. Use \"mode\": \"host\", which books the published "
            "port on the node each task runs on (berth: --publish " +
            flag + ")");
  }
  return Status::Ok();
}

Json ResourcesJson(int64_t milli_cpu, int64_t memory_bytes) {
  return {{"cpu", std::to_string(milli_cpu) + "m"}, {"memory", memory_bytes}};
}

Json NodeUseOf(int64_t tasks, int64_t milli_cpu, int64_t memory_bytes, const NodeResources& node) {
  return {{"tasks", tasks},
          {"allocated", ResourcesJson(milli_cpu, memory_bytes)},
          {"free", ResourcesJson(node.milli_cpu - milli_cpu, node.memory_bytes - memory_bytes)}};
}

}  // namespace berth::api
