// The node session's messages (session/node_session.proto) as berthd reads
// them: bytes parsed as a NodeMessage, and a Reports message's JSON taken
// as NodeSessions takes it (TakeReports, for a node with one assigned
// task). Input starting with '{' is a Reports body, wrapped in a message
// and serialised first, so that the JSON seeds reach the reports path.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/nodes/node_executor.h"
#include "daemon/nodes/node_routes.h"
#include "session/node_session.pb.h"

namespace {

namespace pb = berth::session::v1;

void Take(const pb::NodeMessage& message) {
  if (message.kind_case() != pb::NodeMessage::kReports) return;
  static berth::daemon::NodeExecutor executor([] {});
  static const bool ready = [] {
    executor.SetNode("n1", true);
    executor.Committed(1);
    return true;
  }();
  (void)ready;
  const berth::api::Json body = berth::api::Json::parse(message.reports().json(), nullptr, false);
  if (body.is_discarded()) return;
  (void)berth::daemon::TakeReports(executor, "n1", body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  pb::NodeMessage message;
  if (!input.empty() && input[0] == '{') {
    message.mutable_reports()->set_json(input);
    pb::NodeMessage parsed;
    if (!parsed.ParseFromString(message.SerializeAsString())) __builtin_trap();
    Take(parsed);
    return 0;
  }
  if (message.ParseFromString(input)) Take(message);
  pb::ManagerMessage answer;
  (void)answer.ParseFromString(input);
  return 0;
}
