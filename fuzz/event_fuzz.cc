// libFuzzer target: the event stream's query parser and what an event says
// (src/daemon/events). The input is "<topics>\n<filters>\n<kind>\n<body>":
// any query parses or gives an error Status; any stored body, of any kind,
// describes without crashing, and a parsed filter matches it or not.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/events/describe.h"

namespace {

std::string_view NextLine(std::string_view* rest) {
  const size_t end = rest->find('\n');
  const std::string_view line = rest->substr(0, end);
  rest->remove_prefix(end == std::string_view::npos ? rest->size() : end + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string topics(NextLine(&rest));
  const std::string filters(NextLine(&rest));
  berth::daemon::RecordedEvent event;
  event.index = 1;
  event.kind = std::string(NextLine(&rest));
  event.id = "x";
  event.body = std::string(rest);
  event.deleted = event.body.empty();
  const berth::daemon::DescribedEvent described = berth::daemon::Describe(event);
  (void)berth::daemon::EventJson(event, described)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // as the route writes it
  berth::Result<berth::daemon::EventFilter> filter =
      berth::daemon::EventFilter::Parse(topics, filters);
  if (filter.ok()) (void)filter->Matches(event, described);
  return 0;
}
