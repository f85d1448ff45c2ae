// What the main() of every long-running Berth program (berthd, berth-agent,
// berth-node) shares: stopping on SIGINT or SIGTERM, and turning an
// exception that escapes into a clear message instead of an abort.
#pragma once

#include <signal.h>

#include <functional>

namespace berth {

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it
// starts afterwards, so that only Wait receives them. Make one before any
// thread starts.
class StopSignals {
 public:
  StopSignals();
  // Blocks until SIGINT or SIGTERM arrives; returns its number.
  int Wait();

 private:
  sigset_t set_;
};

// Runs `run` and returns its exit status. Errors are values throughout
// Berth; an exception reaching here is a bug, so it prints "<program>:
// internal error: <what>" and returns 1.
int RunProgram(const char* program, const std::function<int()>& run);

}  // namespace berth
