// How `berth` prints: tables padded to their widest cell, and the
// quantities of berthd's JSON in one spelling whatever spelling they were
// stored in (a berth-node registers bytes, a user writes "8Gi"). Pure
// functions.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "api/json_fields.h"

namespace berth::cli {

// Prints rows under headers, columns padded to their widest cell (the last
// column is not padded).
void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows);

// A JSON value as a cell: a string as it is, null as "-", anything else as
// JSON text.
std::string Text(const api::Json& value);

// Memory in binary units: "8Gi", "512Mi", "23.5Gi" (one decimal unless
// exact), "512" for under 1 KiB. `value` is bytes or a quantity as berthd
// stores it (25276063744, "1Ti", "1.5G"); one it cannot read is shown as
// Text shows it.
std::string FormatMemory(const api::Json& value);
// CPUs: "2", "0.5", "1.25" from 2, "2000m", "500m", "1.25". One it cannot
// read is shown as Text shows it.
std::string FormatCpu(const api::Json& value);

// `text` cut to `limit` characters, the last three "..." (a table's
// message column).
std::string Cut(std::string text, size_t limit = 60);

// The command line of a task template ({"command", "args"}) as a shell
// would read it, or "none (simulated)" without a command.
std::string CommandText(const api::Json& task);

}  // namespace berth::cli
