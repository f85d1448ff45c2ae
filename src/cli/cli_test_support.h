// What the CLI's tests share: running `berth` exactly as a user types it
// (RunBerth with in-memory streams), and ClientCommandsTest, a berthd
// (Daemon) on loopback for the verbs that talk to one. Tests only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "api/api_client.h"
#include "cli/app.h"
#include "daemon/daemon.h"
#include "store/test_dir.h"

namespace berth::cli {

using api::Json;

// A command's exit status and what it printed.
struct Outcome {
  int status;
  std::string out, err;
};

inline Outcome Berth(std::vector<std::string> args, const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  ManualClock clock;
  const int status = RunBerth(args, in, out, err, clock);
  return {status, out.str(), err.str()};
}

// Named for the tests' history: they drove one ClientCommands class.
class ClientCommandsTest : public testing::Test {
 protected:
  void SetUp() override {
    daemon::DaemonOptions options;
    options.data_dir = dir_.path() + "/data";
    options.port = 0;
    // Passes run when a test waits for the loop to settle, so the changes a
    // test makes before that are decided together (job submissions in one
    // admission iteration) however fast the commands run.
    options.loop.window = {std::chrono::hours(1), std::chrono::hours(1)};
    Result<std::unique_ptr<daemon::Daemon>> daemon = daemon::Daemon::Open(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status().message();
    daemon_ = std::move(*daemon);
    connection_ = {"--server", daemon_->url(), "--data-dir", options.data_dir};
  }
  // Runs `berth ARGS` against the fixture's berthd: the connection options
  // go before a `--`, whose words are a command's.
  Outcome Run(std::vector<std::string> args) {
    auto at = std::find(args.begin(), args.end(), "--");
    args.insert(at, connection_.begin(), connection_.end());
    return Berth(args);
  }
  // The API's answer to GET `path` (a test's look at what a command did).
  Json ApiGet(const std::string& path) {
    Result<Json> answer = Api().Call("GET", path);
    return answer.ok() ? *answer : Json();
  }
  // A client of the fixture's berthd (over HTTPS, trusting its CA) with
  // `token` (default: the admin's).
  api::ApiClient Api(const std::string& token = "") const {
    return api::ApiClient(daemon_->url(), token.empty() ? daemon_->token() : token, 30,
                          daemon_->client_tls());
  }

  store::TestDir dir_;
  std::unique_ptr<daemon::Daemon> daemon_;
  std::vector<std::string> connection_;
};

}  // namespace berth::cli
