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

// The page loads only its own files and talks only to berthd: no inline
// script, no other origin, no framing (clickjacking), no guessing of types.
const std::vector<std::pair<std::string, std::string>>& SecurityHeaders() {
  static const std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
  };
  return headers;
}

}  // namespace

// Public routes are exact paths: one per file, and index.html at /ui too.
void Daemon::AddUiRoutes() {
  for (const UiFile& file : UiFiles()) {
    const api::ApiHandler serve = [&file](const ApiRequest&) -> Result<ApiResponse> {
      ApiResponse answer{200, nullptr, std::string(file.text), std::string(ContentType(file.name))};
      answer.headers = SecurityHeaders();
      return answer;
    };
    server_->Route("GET", "/ui/" + std::string(file.name), serve, api::Access::kPublic);
    if (file.name == "index.html")
      for (const char* index : {"/ui", "/ui/"})
        server_->Route("GET", index, serve, api::Access::kPublic);
  }
}

}  // namespace berth::daemon
