// Parsing of user-written quantities: CPUs and bytes.
//
// Used by every decoder (plan documents, API bodies, CLI flags) so that one
// spelling means the same everywhere. Results are exact integers; a value that
// is not a whole number of the unit is an error, never rounded.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace berth {

// CPUs as text: "2", "0.5" (CPUs) or "500m" (milli-CPU). Returns milli-CPU.
Result<int64_t> ParseMilliCpu(std::string_view text);

// CPUs as a JSON number (fractions allowed, at most three decimals).
Result<int64_t> MilliCpuFromNumber(double cpus);

// Bytes as text: "1024", "512Mi", "1.5G". Suffixes k, M, G, T are powers of
// 1000; Ki, Mi, Gi, Ti powers of 1024. Returns bytes.
Result<int64_t> ParseBytes(std::string_view text);

// Bytes as a JSON number (must be a whole number, e.g. 1e9).
Result<int64_t> BytesFromNumber(double bytes);

// Bytes as people read them, in powers of 1024: "64Mi", "1.5Gi"; below
// 1 KiB the plain number ("1000").
std::string FormatBytes(int64_t bytes);

}  // namespace berth
