#include "filter/resource_filter.h"

namespace berth::filter {

bool ResourceFilter::Check(const NodeInfo& node) const {
  if (reservations_->milli_cpu > node.available_milli_cpu()) return false;
  if (reservations_->memory_bytes > node.available_memory_bytes()) return false;
  for (const GenericRequest& request : reservations_->generic)
    if (!node.HasGeneric(request.kind, request.count)) return false;
  return true;
}

}  // namespace berth::filter
