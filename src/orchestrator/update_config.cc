#include "orchestrator/update_config.h"

#include <string>

namespace berth::orchestrator {

std::string_view ToString(FailureAction action) {
  switch (action) {
    case FailureAction::kPause:
      return "pause";
    case FailureAction::kContinue:
      return "continue";
    case FailureAction::kRollback:
      return "rollback";
  }
  return "pause";
}

std::string_view ToString(UpdateOrder order) {
  return order == UpdateOrder::kStartFirst ? "start-first" : "stop-first";
}

Result<FailureAction> ParseFailureAction(std::string_view text) {
  for (FailureAction a :
       {FailureAction::kPause, FailureAction::kContinue, FailureAction::kRollback})
    if (ToString(a) == text) return a;
  return Status::InvalidArgument("failure action '" + std::string(text) +
                                 "' is not one of pause, continue, rollback");
}

Result<UpdateOrder> ParseUpdateOrder(std::string_view text) {
  for (UpdateOrder o : {UpdateOrder::kStopFirst, UpdateOrder::kStartFirst})
    if (ToString(o) == text) return o;
  return Status::InvalidArgument("update order '" + std::string(text) +
                                 "' is not one of stop-first, start-first");
}

}  // namespace berth::orchestrator
