#include "orchestrator/restart_policy.h"

namespace berth::orchestrator {

std::string_view ToString(RestartCondition condition) {
  switch (condition) {
    case RestartCondition::kNone:
      return "none";
    case RestartCondition::kOnFailure:
      return "on-failure";
    case RestartCondition::kAny:
      return "any";
  }
  return "any";
}

Result<RestartCondition> ParseRestartCondition(std::string_view text) {
  for (RestartCondition c :
       {RestartCondition::kNone, RestartCondition::kOnFailure, RestartCondition::kAny})
    if (ToString(c) == text) return c;
  return Status::InvalidArgument("restart condition '" + std::string(text) +
                                 "' is not one of none, on-failure, any");
}

RestartDecision DecideRestart(const RestartPolicy& policy, TaskState ended, Timestamp now,
                              std::deque<Timestamp>& attempts) {
  if (policy.condition == RestartCondition::kNone)
    return {false, {}, "not restarted: restart condition none"};
  if (policy.condition == RestartCondition::kOnFailure && ended == TaskState::kComplete)
    return {false, {}, "not restarted: it completed and the restart condition is on-failure"};
  if (policy.window.count() > 0)
    while (!attempts.empty() && attempts.front() <= now - policy.window) attempts.pop_front();
  if (policy.max_attempts > 0 && attempts.size() >= policy.max_attempts) {
    std::string within =
        policy.window.count() > 0 ? " within " + FormatDuration(policy.window) : "";
    return {false,
            {},
            "not restarted: its slot restarted " + std::to_string(attempts.size()) + " times" +
                within + " (restart max attempts " + std::to_string(policy.max_attempts) + ")"};
  }
  return {true, now + policy.delay, ""};
}

}  // namespace berth::orchestrator
