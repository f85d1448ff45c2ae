// ServiceLookup: the index under which the engine's NodeInfos count a
// service's tasks, for filters that name other services (affinity). Absent:
// the engine has never seen the service, so no node holds any of its tasks.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "core/node_info.h"

namespace berth::filter {

using ServiceLookup = std::function<std::optional<ServiceIndex>(std::string_view service_id)>;

}  // namespace berth::filter
