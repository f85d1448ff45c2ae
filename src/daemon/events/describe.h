// What a recorded change says to an operator (docs/api.md, "Events"), read
// from the object's stored body when a client asks:
//
//   topic    the kind, as the API names it: node, service, task, job,
//            class, rollout (a service's update status), leader
//   type     what happened: "remove" when the object was deleted; else
//            a task's state (pending, assigned, running, failed, ...), a
//            rollout's state (updating, paused, completed, ...), a node's
//            "down", "drain", "pause" or "ready", "elected" for the leader
//            key, and "update" for services, jobs and classes; a task
//            the loop stops while its node still runs it (down, or run
//            elsewhere: desired state shutdown, complete or remove) is
//            "stopping" until its node reports its end
//   key      the object's id
//   message  one line: a task's or rollout's own message (the words `berth
//            task why` and `service inspect` show), or one made of the
//            fields below
//   attributes  the fields that matter, as strings: a task's service or
//            job, node, slot and desired state; a node's state,
//            availability and hostname; ...
//
// A body that does not decode still makes an event, of type "update" with
// no attributes. Pure functions, any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"
#include "daemon/events/event_log.h"

namespace berth::daemon {

struct DescribedEvent {
  std::string topic, type, message;
  std::map<std::string, std::string> attributes;
};

DescribedEvent Describe(const RecordedEvent& event);

// The event as the API writes it: {"index", "time", "topic", "type",
// "key", "message", "attributes"}.
api::Json EventJson(const RecordedEvent& event, const DescribedEvent& described);

// Which events a client wants: topics (`topic=node,task:web.1`: a topic,
// or a topic and a key) and filters (`filter=type:running,service:web`,
// or KEY=VALUE: each key's values are alternatives, different keys must
// all hold). Empty: every event.
class EventFilter {
 public:
  // InvalidArgument naming the valid topics and filter keys.
  static Result<EventFilter> Parse(const std::string& topics, const std::string& filters);

  bool Matches(const RecordedEvent& event, const DescribedEvent& described) const;

  static const std::vector<std::string>& Topics();
  static const std::vector<std::string>& FilterKeys();

 private:
  std::multimap<std::string, std::string> topics_;           // topic -> key ("*": any)
  std::map<std::string, std::vector<std::string>> filters_;  // key -> values
};

}  // namespace berth::daemon
