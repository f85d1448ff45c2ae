// berth: the command-line entry point (see cli/app.h and docs/cli.md).
#include <iostream>
#include <string>
#include <vector>

#include "cli/app.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  berth::SystemClock clock;
  return berth::cli::RunBerth(args, std::cin, std::cout, std::cerr, clock);
}
