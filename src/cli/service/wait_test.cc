// ServiceWatch, fed what berthd would answer, at chosen moments: no
// berthd, no sleeping.
#include "cli/service/wait.h"

#include <gtest/gtest.h>

#include <sstream>

namespace berth::cli {
namespace {

using std::chrono::seconds;

const auto kStart = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);

Json Service(const std::string& rollout_state = "", const std::string& message = "") {
  Json service = {{"id", "web"},
                  {"replicas", 1},
                  {"spec_version", 2},
                  {"update_config", {{"monitor", "5s"}}},
                  {"rollback_config", {{"monitor", "1s"}}}};
  if (!rollout_state.empty())
    service["update_status"] = {
        {"spec_version", 2}, {"state", rollout_state}, {"message", message}};
  return service;
}

Json Task(const std::string& id, const std::string& state, const std::string& desired,
          const std::string& message = "") {
  return {{"id", id},          {"name", id.substr(0, id.rfind('.'))},
          {"slot", 1},         {"service", "web"},
          {"state", state},    {"desired_state", desired},
          {"node", "n1"},      {"spec_version", 2},
          {"message", message}};
}

Json Tasks(std::vector<Json> tasks) { return {{"tasks", tasks}}; }

class ServiceWatchTest : public testing::Test {
 protected:
  ServiceWatch::Verdict Look(const Json& service, const Json& tasks, seconds at) {
    out_.str("");
    err_.str("");
    return watch_.Observe(service, tasks, kStart + at, out_, err_);
  }
  ServiceWatch watch_{{"web", 10}, std::nullopt, true};
  std::ostringstream out_, err_;
};

// On a terminal each slot is a bar, redrawn in place as its task moves
// on; a line printed below the bars (the verify notice) stays.
TEST(ServiceWatchTerminal, DrawsABarPerSlotAndRedrawsItInPlace) {
  ServiceWatch watch({"web", 10}, std::nullopt, true, Terminal{80, 24});
  std::ostringstream out, err;
  watch.Observe(Service(), Tasks({Task("web.1.10", "assigned", "running")}), kStart, out, err);
  EXPECT_EQ(out.str(),
            "web.1  [===========>                  ] assigned  n1\n"
            "overall progress: 0 out of 1 tasks running\n");
  out.str("");
  watch.Observe(Service(), Tasks({Task("web.1.10", "running", "running")}), kStart, out, err);
  EXPECT_EQ(out.str(),
            "\x1b[2A\x1b[J"
            "web.1  [==============================] running   n1\n"
            "overall progress: 1 out of 1 tasks running\n"
            "verify: waiting 5s to verify that the tasks keep running\n");
  out.str("");
  watch.Observe(Service(), Tasks({Task("web.1.10", "failed", "running", "exit status 1")}),
                kStart + seconds(1), out, err);
  EXPECT_EQ(out.str().find("\x1b["), std::string::npos) << "the verify line is not erased";
  EXPECT_NE(out.str().find("web.1  [                              ] failed"), std::string::npos)
      << out.str();
}

// A bar's line longer than the terminal is cut to its width, so that the
// redraw moves up the right number of rows; slots that do not fit its
// height are printed as lines.
TEST(ServiceWatchTerminal, FitsTheTerminal) {
  const std::string why = "no suitable node (" + std::string(100, 'x') + ")";
  std::ostringstream out, err;
  ServiceWatch narrow({"web", 10}, std::nullopt, true, Terminal{60, 24});
  narrow.Observe(Service(), Tasks({Task("web.1.10", "pending", "running", why)}), kStart, out, err);
  const std::string first = out.str().substr(0, out.str().find('\n'));
  EXPECT_EQ(first.size(), 59u) << first;
  out.str("");
  ServiceWatch short_screen({"web", 10}, std::nullopt, true, Terminal{80, 2});
  short_screen.Observe(Service(), Tasks({Task("web.1.10", "running", "running")}), kStart, out,
                       err);
  EXPECT_EQ(out.str().rfind("web.1  running  n1\n", 0), 0u) << out.str();
}

TEST_F(ServiceWatchTest, ConvergedIsVerifiedAfterTheServicesMonitorPeriod) {
  const Json running = Tasks({Task("web.1.10", "running", "running")});
  EXPECT_EQ(Look(Service(), running, seconds(0)), ServiceWatch::Verdict::kWaiting);
  EXPECT_EQ(out_.str(),
            "web.1  running  n1\n"
            "overall progress: 1 out of 1 tasks running\n"
            "verify: waiting 5s to verify that the tasks keep running\n");
  EXPECT_EQ(Look(Service(), running, seconds(4)), ServiceWatch::Verdict::kWaiting);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Look(Service(), running, seconds(5)), ServiceWatch::Verdict::kConverged);
  EXPECT_EQ(out_.str(), "verify: service converged\n");
}

TEST_F(ServiceWatchTest, ATaskOfTheChangeThatStopsEndsTheWait) {
  const Json service = Service();
  EXPECT_EQ(Look(service, Tasks({Task("web.1.10", "running", "running")}), seconds(0)),
            ServiceWatch::Verdict::kWaiting);
  const Json failed = Tasks({Task("web.1.10", "failed", "shutdown", "exit status 1"),
                             Task("web.1.12", "new", "running")});
  EXPECT_EQ(Look(service, failed, seconds(1)), ServiceWatch::Verdict::kFailed);
  EXPECT_NE(out_.str().find("task web.1 (web.1.10) failed: exit status 1\n"), std::string::npos);
  EXPECT_EQ(err_.str(), "berth: web: task web.1 (web.1.10) failed: exit status 1\n");
}

TEST_F(ServiceWatchTest, EarlierStopsDoNotCountAndOneOffTasksMayComplete) {
  const Json earlier = Tasks({Task("web.1.5", "rejected", "shutdown", "cannot run 'x'"),
                              Task("web.1.10", "running", "running")});
  EXPECT_EQ(Look(Service(), earlier, seconds(0)), ServiceWatch::Verdict::kWaiting);
  EXPECT_EQ(err_.str(), "");
  // Restarted after it completed: it did not keep running.
  ServiceWatch restarted({"web", 10}, std::nullopt, true);
  const Json early = Tasks({Task("web.1.10", "complete", "shutdown", "completed (exit status 0)"),
                            Task("web.1.11", "new", "running")});
  EXPECT_EQ(restarted.Observe(Service(), early, kStart, out_, err_),
            ServiceWatch::Verdict::kFailed);
  EXPECT_NE(err_.str().find("task web.1 (web.1.10) ended early: completed (exit status 0)"),
            std::string::npos)
      << err_.str();
  // Not restarted (restart condition none): done, though not running.
  ServiceWatch one_off({"web", 10}, std::nullopt, true);
  out_.str("");
  const Json done = Tasks({Task("web.1.10", "complete", "complete", "completed (exit status 0)")});
  EXPECT_EQ(one_off.Observe(Service(), done, kStart, out_, err_),
            ServiceWatch::Verdict::kCannotConverge);
  EXPECT_NE(out_.str().find("not converged: 1 task(s) wait for a change"), std::string::npos)
      << out_.str();
}

TEST_F(ServiceWatchTest, UnderARolloutFailedTasksAndTheRollbackStartArePrinted) {
  const Json failed = Tasks({Task("web.1.10", "failed", "shutdown", "exit status 1"),
                             Task("web.1.12", "running", "running")});
  EXPECT_EQ(Look(Service("updating", "update in progress"), failed, seconds(0)),
            ServiceWatch::Verdict::kWaiting);
  EXPECT_NE(out_.str().find("task web.1 (web.1.10) failed: exit status 1\n"), std::string::npos)
      << out_.str();
  const std::string why = "update rolled back due to failure or early termination of task web.1.10";
  EXPECT_EQ(Look(Service("rollback_started", why), failed, seconds(1)),
            ServiceWatch::Verdict::kWaiting);
  EXPECT_EQ(out_.str(), "rollback started: " + why + "\n");
  EXPECT_EQ(Look(Service("rollback_completed", why), failed, seconds(2)),
            ServiceWatch::Verdict::kFailed);
  EXPECT_EQ(err_.str(), "berth: web: " + why + "\n");
}

TEST_F(ServiceWatchTest, ARollbackSeenOnlyOnceEndedStillSaysItStarted) {
  const Json running = Tasks({Task("web.1.12", "running", "running")});
  Look(Service("updating", "update in progress"), running, seconds(0));
  const std::string why = "rollback paused due to failure or early termination of task web.1.14";
  EXPECT_EQ(Look(Service("rollback_paused", why), running, seconds(1)),
            ServiceWatch::Verdict::kFailed);
  EXPECT_NE(out_.str().find("rollback started: " + why), std::string::npos) << out_.str();
  // A rollback the command asked for is no news.
  ServiceWatch rollback({"web", 10, true}, std::nullopt, true);
  out_.str("");
  rollback.Observe(Service("rollback_started", "rollback in progress"), running, kStart, out_,
                   err_);
  EXPECT_EQ(out_.str().find("rollback started"), std::string::npos) << out_.str();
}

// The slots and the overall count agree: a slot still running an older
// version says so, and the count is printed again before the verdict.
TEST_F(ServiceWatchTest, ASlotOnAnOlderVersionSaysSoAndTheCountIsPrintedAgain) {
  Json service = Service("updating", "update in progress");
  service["replicas"] = 2;
  Json old = Task("web.2.4", "running", "running");
  old["slot"] = 2;
  old["spec_version"] = 1;
  EXPECT_EQ(Look(service, Tasks({Task("web.1.10", "running", "running"), old}), seconds(0)),
            ServiceWatch::Verdict::kWaiting);
  EXPECT_EQ(out_.str(),
            "web.1  running  n1\n"
            "web.2  running  n1 (version 1, not replaced yet)\n"
            "overall progress: 1 out of 2 tasks running\n");
  service["update_status"]["state"] = "completed";
  Json next = Task("web.2.12", "running", "running");
  next["slot"] = 2;
  EXPECT_EQ(Look(service, Tasks({Task("web.1.10", "running", "running"), next}), seconds(1)),
            ServiceWatch::Verdict::kWaiting);
  EXPECT_EQ(out_.str(),
            "web.1  running  n1\n"
            "web.2  running  n1\n"
            "overall progress: 2 out of 2 tasks running\n"
            "verify: waiting 5s to verify that the tasks keep running\n");
}

TEST(ServiceWatch, QuietAndWithAMonitorGiven) {
  ServiceWatch quiet({"web", 10}, std::chrono::milliseconds(0), false);
  std::ostringstream out, err;
  EXPECT_EQ(
      quiet.Observe(Service(), Tasks({Task("web.1.10", "running", "running")}), kStart, out, err),
      ServiceWatch::Verdict::kConverged);
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(err.str(), "");
}

}  // namespace
}  // namespace berth::cli
