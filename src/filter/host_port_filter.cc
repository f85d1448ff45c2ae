#include "filter/host_port_filter.h"

namespace berth::filter {

bool HostPortFilter::SetTask(const TaskSpec& spec, ServiceIndex) {
  ports_.clear();
  for (const PortSpec& port : spec.ports)
    if (port.OccupiesHostPort()) ports_.push_back(port.Key());
  return !ports_.empty();
}

}  // namespace berth::filter
