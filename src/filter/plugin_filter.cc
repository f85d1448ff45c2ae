#include "filter/plugin_filter.h"

#include <strings.h>

namespace berth::filter {
namespace {

struct Lookup {
  bool type_found = false;  // the node lists some plugin of this type
  bool found = false;
};

Lookup FindPlugin(const Node& node, std::string_view type, std::string_view name) {
  Lookup result;
  for (const PluginRef& plugin : node.plugins) {
    if (plugin.type.size() != type.size() ||
        strncasecmp(plugin.type.data(), type.data(), type.size()) != 0)
      continue;
    result.type_found = true;
    std::string_view have = plugin.name;
    if (have == name || (have.starts_with(name) && have.substr(name.size()) == ":latest")) {
      result.found = true;
      return result;
    }
  }
  return result;
}

}  // namespace

bool PluginFilter::SetTask(const TaskSpec& spec, ServiceIndex) {
  spec_ = &spec;
  return !spec.networks.empty() || !spec.volume_drivers.empty() || !spec.log_driver.empty();
}

bool PluginFilter::Check(const NodeInfo& info) const {
  const Node& node = info.node();
  for (const std::string& driver : spec_->volume_drivers)
    if (!FindPlugin(node, "volume", driver).found) return false;
  for (const std::string& driver : spec_->networks)
    if (!FindPlugin(node, "network", driver).found) return false;
  const std::string& log = spec_->log_driver;
  if (!log.empty() && log != "none") {
    Lookup lookup = FindPlugin(node, "log", log);
    if (lookup.type_found && !lookup.found) return false;
  }
  return true;
}

}  // namespace berth::filter
