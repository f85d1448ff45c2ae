#include "agent/geo_location.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace berth::agent {

double DistanceMeters(const GeoPoint& a, const GeoPoint& b) {
  constexpr double kEarthRadiusM = 6'371'000.0;
  constexpr double kRadiansPerMicroDegree = std::numbers::pi / 180.0 / 1e6;
  const double lat1 = a.lat_micro * kRadiansPerMicroDegree, lat2 = b.lat_micro * kRadiansPerMicroDegree;
  const double dlat = lat2 - lat1, dlon = (b.lon_micro - a.lon_micro) * kRadiansPerMicroDegree;
  const double h = std::sin(dlat / 2) * std::sin(dlat / 2) +
                   std::cos(lat1) * std::cos(lat2) * std::sin(dlon / 2) * std::sin(dlon / 2);
  return 2 * kEarthRadiusM * std::asin(std::min(1.0, std::sqrt(h)));
}

bool GeoLocation::Filter(const AgentNode& node) const {
  if (!edge_->target) return true;
  if (!node.geo || edge_->max_distance_m <= 0) return false;
  return DistanceMeters(*node.geo, *edge_->target) <= static_cast<double>(edge_->max_distance_m);
}

int64_t GeoLocation::Score(const AgentNode& node) const {
  if (!edge_->target || !node.geo || edge_->max_distance_m <= 0) return 100;
  const double d = DistanceMeters(*node.geo, *edge_->target);
  // ceil(100 - 99 * d / max): 100 at the target, 1 at the edge of the radius.
  const double score = std::ceil(100.0 - 99.0 * d / static_cast<double>(edge_->max_distance_m));
  return std::clamp<int64_t>(static_cast<int64_t>(score), 0, 100);
}

}  // namespace berth::agent
