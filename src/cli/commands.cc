#include "cli/commands.h"

#include "cli/events.h"

namespace berth::cli {

void AddClientCommands(CLI::App& app, Verbs& verbs) {
  AddNodeCommands(app, verbs);
  AddServiceCommands(app, verbs);
  AddTaskCommands(app, verbs);
  AddJobCommands(app, verbs);
  AddClassCommands(app, verbs);
  AddTokenCommands(app, verbs);
  AddCaCommands(app, verbs);
  AddEventsCommand(app, verbs);
}

}  // namespace berth::cli
