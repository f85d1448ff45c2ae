// A cluster agent's gRPC messages (session/agent_service.proto) as
// berth-agent reads them: bytes parsed as a SampleBatch or a Payload, and
// each JSON document taken as AgentRpcServer takes it (AgentCalls, on an
// agent of a few simulated nodes). Input starting with '{' is one JSON
// document, wrapped in a batch and a payload first, so that the JSON seeds
// reach the calls.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent_server/agent_service.h"
#include "session/agent_service.pb.h"
#include "sim/vela_nodes.h"

namespace {

namespace pb = berth::agent::v1;
using berth::api::Json;

berth::agent_server::AgentCalls& Calls() {
  static berth::agent::Agent agent({}, berth::sim::MakeVelaNodes("a", 8));
  static berth::agent_server::AgentCalls calls(agent, nullptr);
  return calls;
}

void Take(const std::string& bytes) {
  const Json body = Json::parse(bytes, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return;
  berth::agent_server::AgentCalls& calls = Calls();
  (void)calls.Sample(body, berth::Duration{5});
  (void)calls.Eligible(body);
  (void)calls.Commit(body);
  (void)calls.Release(body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  pb::SampleBatch batch;
  if (!input.empty() && input[0] == '{') {
    batch.add_requests(input);
    pb::SampleBatch parsed;
    if (!parsed.ParseFromString(batch.SerializeAsString())) __builtin_trap();
    for (const std::string& request : parsed.requests()) Take(request);
    return 0;
  }
  if (batch.ParseFromString(input))
    for (const std::string& request : batch.requests()) Take(request);
  pb::Payload payload;
  if (payload.ParseFromString(input)) Take(payload.json());
  pb::SampleAnswers answers;
  (void)answers.ParseFromString(input);
  return 0;
}
