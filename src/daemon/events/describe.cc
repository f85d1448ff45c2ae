#include "daemon/events/describe.h"

#include <algorithm>

namespace berth::daemon {
namespace {

using api::Json;

// A field of `body` as text: strings as they are, numbers and booleans
// written out, anything else "".
std::string Field(const Json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null() || it->is_object() || it->is_array()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// Adds the fields of `body` named in `names` that are set.
void Attributes(const Json& body, std::initializer_list<const char*> names,
                std::map<std::string, std::string>& out) {
  for (const char* name : names)
    if (std::string value = Field(body, name); !value.empty()) out[name] = std::move(value);
}

std::string TopicOf(const std::string& kind) {
  return kind == "update" ? "rollout" : kind == "config" ? "class" : kind;
}

void DescribeTask(const std::string& id, const Json& body, DescribedEvent& d) {
  Attributes(body, {"service", "job", "node", "slot", "desired_state", "agent"}, d.attributes);
  d.type = Field(body, "state");
  if (d.type.empty()) d.type = "update";
  // A task the loop stops where it cannot stop it itself (its node is down,
  // or runs it elsewhere) keeps its state until the node says it ended.
  const std::string desired = Field(body, "desired_state");
  const bool ends = desired == "shutdown" || desired == "complete" || desired == "remove";
  if (ends && (d.type == "assigned" || d.type == "accepted" || d.type == "preparing" ||
               d.type == "starting" || d.type == "running"))
    d.type = "stopping";
  d.message = Field(body, "message");
  if (d.message.empty()) {
    d.message = "task " + id + " " + d.type;
    if (auto node = d.attributes.find("node"); node != d.attributes.end())
      d.message += " on node " + node->second;
  }
}

void DescribeNode(const std::string& id, const Json& body, DescribedEvent& d) {
  Attributes(body, {"state", "availability", "hostname", "address"}, d.attributes);
  const std::string state = Field(body, "state");
  const std::string availability = Field(body, "availability");
  d.type = state == "down"                     ? "down"
           : availability == "drain"           ? "drain"
           : availability == "pause"           ? "pause"
           : state.empty() || state == "ready" ? "ready"
                                               : state;
  d.message = "node " + id + " is " + (state.empty() ? "ready" : state) + ", availability " +
              (availability.empty() ? "active" : availability);
  if (std::string why = Field(body, "message"); !why.empty()) d.message += ": " + why;
}

void DescribeRollout(const std::string& id, const Json& body, DescribedEvent& d) {
  Attributes(body, {"spec_version", "replaced", "failures"}, d.attributes);
  d.attributes["service"] = id;
  d.type = Field(body, "state");
  if (d.type.empty()) d.type = "update";
  d.message = Field(body, "message");
  if (d.message.empty()) d.message = "service " + id + " rollout " + d.type;
}

void DescribeOther(const RecordedEvent& e, const Json& body, DescribedEvent& d) {
  d.type = "update";
  if (e.kind == "service") {
    Attributes(body, {"mode", "replicas", "spec_version"}, d.attributes);
    d.message = "service " + e.id + " stored";
    if (auto v = d.attributes.find("spec_version"); v != d.attributes.end())
      d.message += " (version " + v->second + ")";
  } else if (e.kind == "job") {
    Attributes(body, {"requestor", "tasks", "state"}, d.attributes);
    d.message = "job " + e.id + " stored";
    if (auto n = d.attributes.find("tasks"); n != d.attributes.end())
      d.message += ": " + n->second + " tasks";
  } else if (e.kind == "config") {
    d.message = "the fair-share classes changed";
    if (const auto classes = body.find("classes"); classes != body.end() && classes->is_object())
      for (const auto& [name, percent] : classes->items())
        d.attributes[name] = percent.is_string() ? percent.get<std::string>() : percent.dump();
  } else if (e.kind == "leader") {
    Attributes(body, {"id", "address"}, d.attributes);
    d.type = "elected";
    d.message = "berthd " + Field(body, "id") + " leads (" + Field(body, "address") + ")";
  } else {
    d.message = TopicOf(e.kind) + " " + e.id + " stored";
  }
}

}  // namespace

DescribedEvent Describe(const RecordedEvent& e) {
  DescribedEvent d;
  d.topic = TopicOf(e.kind);
  if (e.deleted) {
    d.type = e.kind == "leader" ? "released" : "remove";
    d.message = d.topic + " " + e.id + " removed";
    return d;
  }
  const Json body = Json::parse(e.body, nullptr, false);
  if (!body.is_object()) {
    d.type = "update";
    d.message = d.topic + " " + e.id + " stored";
    return d;
  }
  if (e.kind == "task") {
    DescribeTask(e.id, body, d);
  } else if (e.kind == "node") {
    DescribeNode(e.id, body, d);
  } else if (e.kind == "update") {
    DescribeRollout(e.id, body, d);
  } else {
    DescribeOther(e, body, d);
  }
  return d;
}

Json EventJson(const RecordedEvent& e, const DescribedEvent& d) {
  return {{"index", e.index},
          {"time", FormatRfc3339(e.time)},
          {"topic", d.topic},
          {"type", d.type},
          {"key", e.id},
          {"message", d.message},
          {"attributes", d.attributes}};
}

const std::vector<std::string>& EventFilter::Topics() {
  static const std::vector<std::string> kTopics = {"node",  "service", "task",  "job",
                                                   "class", "rollout", "leader"};
  return kTopics;
}

const std::vector<std::string>& EventFilter::FilterKeys() {
  static const std::vector<std::string> kKeys = {"topic", "type", "key", "service", "job", "node"};
  return kKeys;
}

namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

bool Known(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Result<EventFilter> EventFilter::Parse(const std::string& topics, const std::string& filters) {
  EventFilter filter;
  for (const std::string& item : SplitList(topics)) {
    const size_t colon = item.find(':');
    const std::string topic = item.substr(0, colon);
    if (!Known(Topics(), topic))
      return Status::InvalidArgument("unknown event topic '" + topic + "': the topics are " +
                                     Joined(Topics()));
    const std::string key = colon == std::string::npos ? "*" : item.substr(colon + 1);
    if (key.empty())
      return Status::InvalidArgument("topic '" + item + "' names no key: use " + topic + " or " +
                                     topic + ":KEY");
    filter.topics_.emplace(topic, key);
  }
  for (const std::string& item : SplitList(filters)) {
    const size_t equals = item.find_first_of(":=");
    const std::string key = item.substr(0, equals);
    if (equals == std::string::npos || equals + 1 == item.size())
      return Status::InvalidArgument("filter '" + item + "' is not KEY:VALUE");
    if (!Known(FilterKeys(), key))
      return Status::InvalidArgument("unknown event filter '" + key + "': the filters are " +
                                     Joined(FilterKeys()));
    const std::string value = item.substr(equals + 1);
    if (key == "topic" && !Known(Topics(), value))
      return Status::InvalidArgument("unknown event topic '" + value + "': the topics are " +
                                     Joined(Topics()));
    filter.filters_[key].push_back(value);
  }
  return filter;
}

bool EventFilter::Matches(const RecordedEvent& e, const DescribedEvent& d) const {
  if (!topics_.empty()) {
    const auto [first, last] = topics_.equal_range(d.topic);
    if (std::none_of(first, last,
                     [&](const auto& t) { return t.second == "*" || t.second == e.id; }))
      return false;
  }
  for (const auto& [key, values] : filters_) {
    std::string actual;
    if (key == "topic") {
      actual = d.topic;
    } else if (key == "type") {
      actual = d.type;
    } else if (key == "key") {
      actual = e.id;
    } else if (d.topic == key) {
      actual = e.id;  // node:n1 takes node n1's own events too
    } else if (auto it = d.attributes.find(key); it != d.attributes.end()) {
      actual = it->second;
    }
    if (!Known(values, actual)) return false;
  }
  return true;
}

}  // namespace berth::daemon
