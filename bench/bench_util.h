// Helpers shared by the benchmark programs: peak memory and running one
// scenario in its own process, so each scenario's peak RSS is its own.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <type_traits>

namespace berth::bench {

// A command-line value that must be an integer in 1..max, or -1.
inline int ParsePositiveInt(const char* text, long max) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return (end == text || *end != '\0' || value < 1 || value > max) ? -1 : static_cast<int>(value);
}

// Peak resident set size of this process so far, in KiB.
inline long PeakRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Runs `run()` in a forked child and copies its result back through a pipe.
// Returns false when the child fails or dies. The result must be trivially
// copyable.
template <typename Outcome, typename Run>
bool RunIsolated(const Run& run, Outcome* out) {
  static_assert(std::is_trivially_copyable_v<Outcome>);
  int fds[2];
  if (pipe(fds) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    close(fds[0]);
    Outcome o = run();
    ssize_t w = write(fds[1], &o, sizeof o);
    _exit(w == sizeof o ? 0 : 1);
  }
  close(fds[1]);
  ssize_t got = read(fds[0], out, sizeof *out);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got == static_cast<ssize_t>(sizeof *out) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace berth::bench
