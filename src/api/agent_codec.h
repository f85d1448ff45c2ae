// The berth-agent wire format: JSON for the messages of agent/protocol.h
// (docs/agent.md). A task travels with its template as a task object of
// docs/plan.md, so the agent decodes it with the same strict decoder.
// Encode* never fail; Decode* return InvalidArgument naming the field.
// Pure functions.
#pragma once

#include "agent/protocol.h"
#include "api/json_fields.h"
#include "core/status.h"

namespace berth::api {

// The task-template object of a TaskSpec (the inverse of DecodeTaskSpec for
// every field placement reads; ports without a published port are left out,
// since placement ignores them).
Json EncodeTaskSpec(const TaskSpec& spec);

Json EncodeSampleRequest(const agent::SampleRequest& request);
Result<agent::SampleRequest> DecodeSampleRequest(const Json& body);
Json EncodeSampleResponse(const agent::SampleResponse& response);
// `agent_id` is set on every node: the wire does not repeat it.
Result<agent::SampleResponse> DecodeSampleResponse(const Json& body, const std::string& agent_id);

Json EncodeCommitRequest(const agent::CommitRequest& request);
Result<agent::CommitRequest> DecodeCommitRequest(const Json& body);
Json EncodeCommitResponse(const agent::CommitResponse& response);
Result<agent::CommitResponse> DecodeCommitResponse(const Json& body);

// An object with one list of ids: POST /v1/release's {"tasks": [...]}
// (answered {"released": n}), GET /v1/bindings' {"tasks": [...]} and
// POST /v1/eligible's answer {"nodes": [...]}.
// GET /v1/runs's answer (docs/agent.md).
Json EncodeRunsBatch(const agent::RunsBatch& batch);
Result<agent::RunsBatch> DecodeRunsBatch(const Json& body);

Json EncodeIdList(const char* field, const std::vector<std::string>& ids);
Result<std::vector<std::string>> DecodeIdList(const Json& body, const char* field);

// POST /v1/eligible: {"task": template}, the nodes where a global
// service's task may run as far as the node alone decides.
Json EncodeEligibleRequest(const TaskSpec& spec);
Result<TaskSpec> DecodeEligibleRequest(const Json& body);

}  // namespace berth::api
