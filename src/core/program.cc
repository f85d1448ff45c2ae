#include "core/program.h"

#include <pthread.h>

#include <cstdio>
#include <exception>

namespace berth {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

int StopSignals::Wait() {
  int signal = 0;
  sigwait(&set_, &signal);
  return signal;
}

int RunProgram(const char* program, const std::function<int()>& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace berth
