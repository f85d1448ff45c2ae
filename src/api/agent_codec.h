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

// POST /v1/release: {"tasks": [task ids]}, answered {"released": n}.
Json EncodeReleaseRequest(const std::vector<std::string>& task_ids);
Result<std::vector<std::string>> DecodeReleaseRequest(const Json& body);

}  // namespace berth::api
