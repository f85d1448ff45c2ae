// libFuzzer target: the files of a task's directory that berth-exec and
// berth-node read from each other (executor/task_dir.h): the env file, the
// pid record and the exit record. Any input must parse or be refused, never
// crash; what parses formats back to what parses (the same, but for an
// exit record, whose formatting turns line breaks in a reason into spaces).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "executor/task_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace executor = berth::executor;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto env = executor::ParseEnvFile(text)) {
    if (executor::ParseEnvFile(executor::FormatEnvFile(*env)) != env) __builtin_trap();
  }
  if (auto pid = executor::ParsePidRecord(text)) {
    if (executor::ParsePidRecord(executor::FormatPidRecord(*pid)) != pid) __builtin_trap();
  }
  if (auto exit = executor::ParseExitRecord(text)) {
    if (!executor::ParseExitRecord(executor::FormatExitRecord(*exit))) __builtin_trap();
  }
  return 0;
}
