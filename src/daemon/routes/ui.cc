// The dashboard: GET /ui/ and its files (docs/dashboard.md). They are
// public, as a login page is: they hold no data, and the page asks for the
// API token before it reads anything.
#include "daemon/daemon.h"
#include "daemon/routes/routes.h"
#include "daemon/ui/ui_files.h"

namespace berth::daemon {
namespace {

std::string_view ContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

Result<ApiResponse> Serve(std::string_view name) {
  for (const UiFile& file : UiFiles())
    if (file.name == name)
      return ApiResponse{200, nullptr, std::string(file.text), std::string(ContentType(name))};
  return Status::NotFound("no dashboard file '" + std::string(name) + "'");
}

}  // namespace

// Public routes are exact paths: one per file.
void Daemon::AddUiRoutes() {
  for (const char* index : {"/ui", "/ui/"})
    server_->Route(
        "GET", index, [](const ApiRequest&) { return Serve("index.html"); }, api::Access::kPublic);
  for (const UiFile& file : UiFiles())
    server_->Route(
        "GET", "/ui/" + std::string(file.name),
        [name = file.name](const ApiRequest&) { return Serve(name); }, api::Access::kPublic);
}

}  // namespace berth::daemon
