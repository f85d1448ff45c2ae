// The dashboard's static files (index.html, app.js, style.css in this
// folder), built into berthd by cmake/embed_files.cmake and served under
// /ui/ (routes/ui.cc, docs/dashboard.md).
#pragma once

#include <string_view>
#include <vector>

namespace berth::daemon {

struct UiFile {
  std::string_view name;  // "app.js"
  std::string_view text;
};
const std::vector<UiFile>& UiFiles();

}  // namespace berth::daemon
