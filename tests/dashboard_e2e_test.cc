// The dashboard in a real browser: a berthd process on loopback with a few
// nodes, services, classes and a job; headless Chromium (Debian's, driven
// through ChromeDriver's WebDriver API) loads /ui/, is given the token once
// through the login form, and the test asserts on the rendered DOM. Each
// view's screenshot is saved as a test artefact (DASHBOARD_ARTEFACTS).
// Every process is started here and stopped by its pid; ChromeDriver stops
// the browser it started when the session ends.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "process.h"
#include "store/test_dir.h"

namespace berth {
namespace {

using Json = nlohmann::json;
using testing_support::PortInLine;
using testing_support::Process;

constexpr const char* kChromium = "/usr/bin/chromium";
constexpr const char* kChromeDriver = "/usr/bin/chromedriver";

// The processes whose parent is this one, other than `keep`: Chromium's
// helpers that outlived ChromeDriver come here (a child subreaper).
std::vector<pid_t> ChildrenBut(pid_t keep) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close_paren = line.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(line.substr(close_paren + 2));
    char state = 0;
    pid_t parent = 0;
    rest >> state >> parent;
    const pid_t pid = std::stoi(name);
    if (parent == getpid() && pid != keep) children.push_back(pid);
  }
  return children;
}

// A port nothing listens on now (ChromeDriver takes its port as an option).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string DecodeBase64(const std::string& text) {
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return "";
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++padding;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

// One WebDriver session (W3C protocol) on a ChromeDriver.
class Browser {
 public:
  Browser(int port, const std::string& profile) : driver_("127.0.0.1", port) {
    driver_.set_read_timeout(60);
    const Json options = {
        {"binary", kChromium},
        {"args",
         {"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--window-size=1400,1000", "--user-data-dir=" + profile}}};
    const Json session = Call("POST", "/session",
                              {{"capabilities",
                                {{"alwaysMatch",
                                  {{"browserName", "chrome"},
                                   {"acceptInsecureCerts", true},  // berthd's own CA
                                   {"goog:loggingPrefs", {{"browser", "ALL"}}},
                                   {"goog:chromeOptions", options}}}}}});
    id_ = session.value("sessionId", "");
  }
  ~Browser() {
    if (!id_.empty()) driver_.Delete("/session/" + id_);
  }
  bool started() const { return !id_.empty(); }

  Json Call(const std::string& method, const std::string& path, const Json& body = Json::object()) {
    httplib::Result r =
        method == "GET" ? driver_.Get(path) : driver_.Post(path, body.dump(), "application/json");
    if (!r) return {{"error", "no answer from chromedriver"}};
    Json answer = Json::parse(r->body, nullptr, false);
    return answer.is_object() && answer.contains("value") ? answer["value"] : answer;
  }
  Json Session(const std::string& method, const std::string& path, const Json& body = {}) {
    return Call(method, "/session/" + id_ + path, body.is_null() ? Json::object() : body);
  }
  // Runs `script` (a function body) in the page.
  Json Run(const std::string& script) {
    return Session("POST", "/execute/sync", {{"script", script}, {"args", Json::array()}});
  }
  // Waits in the page until `predicate` (a JS expression) holds: the
  // page's own event loop checks it, bounded by the script timeout.
  bool WaitFor(const std::string& predicate) {
    const Json done = Session(
        "POST", "/execute/async",
        {{"script", "const done = arguments[0]; const check = () => { try { if (" + predicate +
                        ") return done(true); } catch (e) {} requestAnimationFrame(check); }; "
                        "check();"},
         {"args", Json::array()}});
    return done == true;
  }
  std::string Element(const std::string& css) {
    const Json e = Session("POST", "/element", {{"using", "css selector"}, {"value", css}});
    return e.is_object() && !e.empty() ? e.begin().value().get<std::string>() : "";
  }
  void Type(const std::string& css, const std::string& text) {
    Session("POST", "/element/" + Element(css) + "/value", {{"text", text}});
  }
  void Click(const std::string& css) { Session("POST", "/element/" + Element(css) + "/click"); }
  bool Screenshot(const std::string& path) {
    const Json png = Session("GET", "/screenshot");
    if (!png.is_string()) return false;
    std::ofstream(path, std::ios::binary) << DecodeBase64(png.get<std::string>());
    return std::filesystem::file_size(path) > 0;
  }

 private:
  httplib::Client driver_;
  std::string id_;
};

class DashboardTest : public testing::Test {
 protected:
  void SetUp() override {
    // Chromium's processes that outlive ChromeDriver become this test's
    // children, so TearDown stops them by pid.
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    for (const char* program : {kChromium, kChromeDriver})
      if (access(program, X_OK) != 0)
        GTEST_SKIP() << program << " is not installed (scripts/setup installs chromium and "
                     << "chromium-driver)";
    berthd_ = std::make_unique<Process>(
        std::vector<std::string>{BERTHD_BINARY, "--data-dir", dir_.path() + "/d", "--port", "0"});
    port_ = PortInLine(berthd_->WaitForLine("listening on", std::chrono::seconds(30)));
    ASSERT_FALSE(port_.empty());
    std::ifstream(dir_.path() + "/d/token") >> token_;
    ASSERT_FALSE(token_.empty());
    api_ = std::make_unique<httplib::Client>("https://127.0.0.1:" + port_);
    api_->enable_server_certificate_verification(false);  // loopback; the browser's view is tested
    api_->set_bearer_token_auth(token_);
  }
  void TearDown() override {
    browser_.reset();  // the session ends: ChromeDriver stops Chromium
    if (driver_) driver_->Kill(SIGTERM);
    const pid_t berthd = berthd_ ? berthd_->pid() : 0;
    for (pid_t orphan : ChildrenBut(berthd)) {
      kill(orphan, SIGKILL);
      waitpid(orphan, nullptr, 0);
    }
    if (berthd_) berthd_->Kill(SIGTERM);
  }
  void Post(const std::string& path, const Json& body, const std::string& method = "POST") {
    httplib::Result r = method == "PATCH" ? api_->Patch(path, body.dump(), "application/json")
                                          : api_->Post(path, body.dump(), "application/json");
    ASSERT_TRUE(r) << path;
    ASSERT_LT(r->status, 300) << path << ": " << r->body;
  }
  void StartBrowser() {
    const int port = FreePort();
    driver_ = std::make_unique<Process>(
        std::vector<std::string>{kChromeDriver, "--port=" + std::to_string(port)},
        Process::Stderr::kMerge);
    ASSERT_NE(driver_->WaitForLine("started successfully", std::chrono::seconds(30)), "");
    browser_ = std::make_unique<Browser>(port, dir_.path() + "/chromium");
    ASSERT_TRUE(browser_->started());
    browser_->Session("POST", "/timeouts", {{"script", 30000}});
  }
  // Tasks in state running, as the snapshot counts them.
  int64_t RunningTasks() {
    httplib::Result r = api_->Get("/v1/snapshot");
    return r ? Json::parse(r->body)["tasks"].value("running", int64_t{0}) : -1;
  }
  std::string Text(const std::string& css) {
    const Json text = browser_->Run("const e = document.querySelector(" + Json(css).dump() +
                                    "); return e ? e.textContent : null;");
    return text.is_string() ? text.get<std::string>() : "";
  }

  store::TestDir dir_;
  std::unique_ptr<Process> berthd_, driver_;
  std::unique_ptr<httplib::Client> api_;
  std::unique_ptr<Browser> browser_;
  std::string port_, token_;
};

TEST_F(DashboardTest, ShowsTheClusterServicesClassesAndEventsOfOneSnapshot) {
  for (const auto& [id, az] : {std::pair{"n1", "a"}, {"n2", "a"}, {"n3", "b"}})
    Post("/v1/nodes", {{"id", id},
                       {"labels", {{"az", az}}},
                       {"resources", {{"cpu", 2}, {"memory", "4Gi"}, {"generic", {{"gpu", 2}}}}}});
  Post("/v1/services",
       {{"id", "web"}, {"replicas", 3}, {"task", {{"resources", {{"cpu", "500m"}}}}}});
  Post("/v1/services", {{"id", "big"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 16}}}}}});
  Post("/v1/classes",
       {{"classes", {{"land", 70}, {"diff", 30}}},
        {"requestors", Json::array({Json::array({"^ci", "land"})})}},
       "PATCH");
  Post("/v1/jobs", {{"id", "build"}, {"requestor", "ci"}, {"tasks", {{{"duration", 600}}}}});
  // A one-off that finishes, and a service rolled back by hand.
  Post("/v1/services", {{"id", "hello"},
                        {"replicas", 1},
                        {"restart_policy", {{"condition", "none"}}},
                        {"run", {{"duration", 0}}}});
  Post("/v1/services", {{"id", "back"},
                        {"replicas", 1},
                        {"rollback_config", {{"monitor", "0s"}}},
                        {"update_config", {{"monitor", "0s"}}}});
  ASSERT_TRUE(api_->Get("/v1/health?wait=settled&timeout=30"));
  Post("/v1/services/back", {{"task", {{"resources", {{"cpu", "10m"}}}}}}, "PATCH");
  ASSERT_TRUE(api_->Get("/v1/health?wait=settled&timeout=30"));
  Post("/v1/services/back/rollback", Json::object());
  ASSERT_TRUE(api_->Get("/v1/health?wait=settled&timeout=30"));

  StartBrowser();
  browser_->Session("POST", "/url", {{"url", "https://127.0.0.1:" + port_ + "/ui/"}});
  ASSERT_TRUE(browser_->WaitFor("!document.getElementById('login').hidden"))
      << browser_->Session("POST", "/se/log", {{"type", "browser"}}).dump();
  browser_->Type("#token", token_);
  browser_->Click("#login button");
  ASSERT_TRUE(browser_->WaitFor("document.querySelectorAll('.node').length === 3"));
  // berthd's Content-Security-Policy must refuse nothing the page does: the
  // refreshes and views from here on are watched.
  browser_->Run(
      "window.refused = []; document.addEventListener('securitypolicyviolation', "
      "(e) => window.refused.push(e.violatedDirective + ' ' + e.blockedURI));");

  // Cluster: the nodes, grouped by az, with the service's tasks as chips.
  EXPECT_EQ(Text("[data-node='n3'] .node-id"), "n3");
  browser_->Type("#group-by", "az");
  ASSERT_TRUE(browser_->WaitFor("document.querySelectorAll('.group').length === 2"));
  EXPECT_NE(Text("#nodes"), "");
  EXPECT_EQ(browser_->Run("return document.querySelectorAll('.chip[title=web]').length"), 3);
  // Colours and bar widths are set through the CSSOM, which berthd's
  // Content-Security-Policy (no inline style) allows.
  EXPECT_NE(browser_->Run("return document.querySelector('.chip[title=web]').style.background"),
            "");
  EXPECT_EQ(browser_->Run("return getComputedStyle(document.querySelector('.chip')).fontSize"),
            "10px");  // style.css, as the policy lets it load
  // A task that leaves its node stays on the card as ended for a minute,
  // rather than vanishing at the next refresh.
  Post("/v1/services/web", {{"replicas", 2}}, "PATCH");
  ASSERT_TRUE(api_->Get("/v1/health?wait=settled&timeout=30"));
  ASSERT_TRUE(browser_->WaitFor("document.querySelectorAll('.chip.ended').length === 1"));
  EXPECT_EQ(browser_->Run("return document.querySelectorAll('.chip[title=web]').length"), 2);
  EXPECT_EQ(browser_->Run("return document.querySelector('.chip.ended').title"),
            "web: 1 ended in the last minute");
  EXPECT_TRUE(browser_->Screenshot(std::string(DASHBOARD_ARTEFACTS) + "/cluster.png"));

  // Services: web runs 2 of 2; big waits, with the engine's reason.
  browser_->Click("nav button[data-view=services]");
  EXPECT_EQ(Text("[data-service=web] .replicas"), "2/2");
  EXPECT_NE(Text("[data-service=big] .pending").find("no suitable node"), std::string::npos)
      << Text("[data-service=big] .pending");
  // The filters' explanation, a line each.
  EXPECT_EQ(Text("[data-service=big] .explanation"), "insufficient resources on 3 nodes");
  // Rollout states in words, a finished one-off says so, and the tasks
  // that wait are counted in the cluster view and the header.
  EXPECT_EQ(Text("[data-service=back] .rollout"), "rolled back");
  EXPECT_EQ(Text("[data-service=hello] .replicas"), "0/1 · 1 complete");
  EXPECT_EQ(Text("#waiting"), "1 task waiting: 1 no suitable node (Services and Jobs say which)");
  EXPECT_NE(Text("#status").find("(" + std::to_string(RunningTasks()) + " running, 1 waiting)"),
            std::string::npos)
      << Text("#status");
  EXPECT_TRUE(browser_->Screenshot(std::string(DASHBOARD_ARTEFACTS) + "/services.png"));

  // Classes: land's entitlement as berthd's admission status says.
  httplib::Result snapshot = api_->Get("/v1/snapshot");
  ASSERT_TRUE(snapshot);
  const Json land = Json::parse(snapshot->body)["admission"]["classes"]["land"];
  browser_->Click("nav button[data-view=jobs]");
  EXPECT_EQ(Text("[data-class=land] .entitlement"), land["entitlement"].dump()) << land.dump();
  EXPECT_NE(Text("[data-job=build]"), "");
  EXPECT_EQ(Text("[data-job=build] .state"), "active");
  EXPECT_TRUE(browser_->Screenshot(std::string(DASHBOARD_ARTEFACTS) + "/jobs.png"));

  // Events: the stream shows what happened, the nodes' registration first.
  browser_->Click("nav button[data-view=events]");
  ASSERT_TRUE(browser_->WaitFor("document.querySelectorAll('#event-list li').length > 5"));
  EXPECT_NE(Text("#event-list").find("node"), std::string::npos);
  // A task's event keeps its node, as `berth events` prints it.
  ASSERT_TRUE(
      browser_->WaitFor("[...document.querySelectorAll('#event-list li[data-topic=task]')]"
                        ".some((li) => /\\(.*node=n[123]/.test(li.textContent))"))
      << Text("#event-list");
  EXPECT_TRUE(browser_->Screenshot(std::string(DASHBOARD_ARTEFACTS) + "/events.png"));

  // The token stays in this tab's storage, never in the address.
  const Json where = browser_->Run("return location.href");
  EXPECT_EQ(where.get<std::string>().find(token_), std::string::npos);
  EXPECT_EQ(browser_->Run("return sessionStorage.getItem('berth.token')"), token_);
  EXPECT_EQ(browser_->Run("return window.refused"), Json::array());
}

}  // namespace
}  // namespace berth
