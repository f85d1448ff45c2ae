#include "cli/service/wait.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ostream>
#include <thread>

#include "cli/task_table.h"
#include "orchestrator/orchestrator.h"

namespace berth::cli {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// The monitor a service's own rollout config gives (Docker's verify uses
// the same); berthd stores it in full, so the fallback is only for an
// answer without it.
Duration ServiceMonitor(const Json& service) {
  const char* config =
      service.value("update_kind", "") == "rollback" ? "rollback_config" : "update_config";
  const Json monitor = service.value(config, Json::object()).value("monitor", Json());
  Result<Duration> parsed =
      ParseDuration(monitor.is_string() ? monitor.get<std::string>() : std::string());
  return parsed.ok() ? *parsed : std::chrono::seconds(5);
}

// "task web.2 (web.2.15) failed: exit status 1" when `t` stopped by itself
// while it was meant to run; "" otherwise. A task that completed is meant
// to have run only when its slot does not restart it (desired state
// complete).
std::string StoppedByItself(const Json& t) {
  const std::string state = t.value("state", ""), desired = t.value("desired_state", "");
  std::string how;
  if (state == "failed" || state == "rejected")
    how = state;
  else if (state == "complete" && desired != "complete")
    how = "ended early";
  else
    return "";
  const std::string id = t.value("id", "");
  return "task " + t.value("name", id) + " (" + id + ") " + how + ": " + t.value("message", "");
}

std::string RolloutField(const Json& service, const char* field) {
  const Json status = service.value("update_status", Json::object());
  return status.is_object() ? status.value(field, "") : "";
}

// A rollout that ended badly: the wait is over with its reason.
bool RolloutFailed(const std::string& state, const std::string& why) {
  return state == "paused" || state == "rollback_paused" ||
         (state == "rollback_completed" && why.starts_with("update rolled back"));
}

void PrintOverall(const ServiceProgress& progress, std::ostream& out) {
  out << "overall progress: " << progress.running << " out of " << progress.desired
      << " tasks running\n";
}

// "[==========>         ]": how far a task got from new to running, as
// `docker service create` draws it; an ended task's bar is empty.
std::string Bar(const std::string& state) {
  static constexpr const char* kSteps[] = {"new",       "pending",  "assigned", "accepted",
                                           "preparing", "starting", "running"};
  constexpr size_t kWidth = 30, kStepCount = std::size(kSteps);
  const auto step = static_cast<size_t>(std::find(std::begin(kSteps), std::end(kSteps), state) -
                                        std::begin(kSteps));
  const size_t filled = step < kStepCount ? (step + 1) * kWidth / kStepCount : 0;
  std::string bar = "[" + std::string(filled, '=');
  if (filled > 0) bar.back() = filled == kWidth ? '=' : '>';
  return bar + std::string(kWidth - filled, ' ') + "]";
}

// `line` cut to `width` bytes (not inside a UTF-8 character), so that it
// takes one row and the redraw's count of rows holds.
std::string FitTo(std::string line, size_t width) {
  if (line.size() <= width) return line;
  size_t cut = width;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  line.resize(cut);
  return line;
}

CLI::Validator DurationRule() {
  return CLI::Validator(
      [](std::string& value) {
        Result<Duration> d = ParseDuration(value);
        return d.ok() ? std::string() : d.status().message();
      },
      "DURATION");
}

}  // namespace

void WaitFlags::Add(CLI::App& verb) {
  verb.add_flag("-d,--detach", detach, "return at once instead of waiting to converge");
  verb.add_option("--timeout", timeout_s, "seconds to wait to converge (default 60)")
      ->check(CLI::PositiveNumber);
  verb.add_option("--monitor", monitor,
                  "how long the tasks must keep running once converged (default: the service's "
                  "update monitor, 5s unless set; 0s: do not watch)")
      ->check(DurationRule());
}

std::optional<Duration> WaitFlags::Monitor() const {
  if (monitor.empty()) return std::nullopt;
  return *ParseDuration(monitor);  // checked by DurationRule when parsed
}

ServiceWatch::ServiceWatch(ServiceChange change, std::optional<Duration> monitor, bool progress,
                           Terminal terminal)
    : change_(std::move(change)), monitor_(monitor), progress_(progress), terminal_(terminal) {}

ServiceWatch::Verdict ServiceWatch::Observe(const Json& service, const Json& tasks, SteadyTime now,
                                            std::ostream& out, std::ostream& err) {
  const ServiceProgress progress = ProgressOf(service, tasks);
  const std::string rollout = RolloutField(service, "state"),
                    why = RolloutField(service, "message");
  const std::vector<std::string> stopped = Narrate(progress, rollout, why, tasks, out);
  if (RolloutFailed(rollout, why)) {
    if (progress_) PrintOverall(progress, out);
    err << "berth: " << change_.service << ": " << why << "\n";
    return Verdict::kFailed;
  }
  // Under a rollout, berthd's failure action judges its failed tasks.
  const bool rolling = rollout == "updating" || rollout == "rollback_started";
  if (!stopped.empty() && !rolling) {
    err << "berth: " << change_.service << ": " << stopped.front() << "\n";
    return Verdict::kFailed;
  }
  if (progress.converged() && !rolling) {
    if (!Verified(service, now, out)) return Verdict::kWaiting;
    if (progress_) out << "verify: service converged\n";
    return Verdict::kConverged;
  }
  converged_at_.reset();  // a slot that changed (a drained node) starts the period again
  if (progress.stuck.empty() || progress.running + progress.stuck.size() < progress.desired)
    return Verdict::kWaiting;
  out << (progress_ ? "" : change_.service + ": ") << "not converged: " << progress.stuck.size()
      << " task(s) wait for a change (" << (progress_ ? "see the reasons above; " : "")
      << "berth service ps " << change_.service << ")\n";
  return Verdict::kCannotConverge;
}

std::vector<std::string> ServiceWatch::Narrate(const ServiceProgress& progress,
                                               const std::string& rollout, const std::string& why,
                                               const Json& tasks, std::ostream& out) {
  if (progress_ && (progress.slots != shown_ || progress.running != shown_running_)) {
    if (terminal_.on() && progress.slots.size() + 1 < static_cast<size_t>(terminal_.rows)) {
      Redraw(progress, out);
    } else {
      for (const ServiceProgress::Slot& slot : progress.slots) out << slot.Line() << "\n";
      PrintOverall(progress, out);
    }
    shown_ = progress.slots;
    shown_running_ = progress.running;
  }
  if (RollbackBegan(rollout)) {
    out << "rollback started: " << why << "\n";
    drawn_ = 0;  // the next bars go below this line
  }
  rollout_state_ = rollout;
  std::vector<std::string> stopped = NewlyStopped(tasks);
  if (progress_)
    for (const std::string& line : stopped) out << line << "\n";
  if (!stopped.empty()) drawn_ = 0;
  return stopped;
}

void ServiceWatch::Redraw(const ServiceProgress& progress, std::ostream& out) {
  if (drawn_ > 0) out << "\x1b[" << drawn_ << "A\x1b[J";  // up, then clear to the end
  size_t width = 0;
  for (const ServiceProgress::Slot& slot : progress.slots)
    width = std::max(width, slot.name.size());
  for (const ServiceProgress::Slot& slot : progress.slots) {
    std::string line = slot.name + std::string(width - slot.name.size(), ' ') + "  " +
                       Bar(slot.state) + " " + slot.state +
                       std::string(slot.state.size() < 9 ? 9 - slot.state.size() : 0, ' ') + " " +
                       slot.where;
    out << FitTo(std::move(line), static_cast<size_t>(terminal_.columns - 1)) << "\n";
  }
  PrintOverall(progress, out);
  drawn_ = progress.slots.size() + 1;
}

// A rollback of the change, rather than the change itself: one seen to
// start, or a rollback state after the update was seen under way (the
// rollback may have ended between two looks).
bool ServiceWatch::RollbackBegan(const std::string& rollout) const {
  if (change_.rollback || rollout == rollout_state_) return false;
  return rollout == "rollback_started" ||
         (rollout.starts_with("rollback_") && rollout_state_ == "updating");
}

std::vector<std::string> ServiceWatch::NewlyStopped(const Json& tasks) {
  std::vector<std::string> stopped;
  for (const Json& t : tasks.value("tasks", Json::array())) {
    const std::string id = t.value("id", "");
    if (orchestrator::SerialOf(id) < change_.revision || reported_.contains(id)) continue;
    if (std::string line = StoppedByItself(t); !line.empty()) {
      reported_.insert(id);
      stopped.push_back(std::move(line));
    }
  }
  return stopped;
}

bool ServiceWatch::Verified(const Json& service, SteadyTime now, std::ostream& out) {
  const Duration monitor = monitor_.value_or(ServiceMonitor(service));
  if (!converged_at_) {
    converged_at_ = now;
    if (monitor > Duration::zero() && progress_) {
      drawn_ = 0;  // the bars stay above this line
      out << "verify: waiting " << FormatDuration(monitor)
          << " to verify that the tasks keep running\n";
    }
  }
  return now - *converged_at_ >= monitor;
}

namespace {

// Once berthd's loop settled, one look at each service still waited for;
// false when berthd failed a request. A watch whose wait ended is dropped,
// setting *status to 1 if it failed.
bool LookOnce(api::ApiClient& client, double seconds_left, std::vector<ServiceWatch>& watches,
              int* status, std::ostream& out, std::ostream& err) {
  const std::string settled =
      "/v1/health?wait=settled&timeout=" + std::to_string(std::clamp(seconds_left, 0.0, 600.0));
  if (!CallOrSay(client, "GET", settled, nullptr, err)) return false;
  for (auto it = watches.begin(); it != watches.end();) {
    const std::string& id = it->service();
    std::optional<Json> spec = CallOrSay(client, "GET", "/v1/services/" + id, nullptr, err);
    std::optional<Json> tasks =
        spec ? CallOrSay(client, "GET", "/v1/tasks?service=" + id, nullptr, err) : std::nullopt;
    if (!tasks) return false;
    const auto verdict = it->Observe(*spec, *tasks, std::chrono::steady_clock::now(), out, err);
    if (verdict == ServiceWatch::Verdict::kFailed) *status = 1;
    it = verdict == ServiceWatch::Verdict::kWaiting ? it + 1 : watches.erase(it);
  }
  return true;
}

}  // namespace

int WaitForServices(api::ApiClient& client, const std::vector<ServiceChange>& changes,
                    const WaitFlags& flags, bool progress, std::ostream& out, std::ostream& err,
                    Terminal terminal) {
  if (flags.detach) return 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_s * 1000));
  std::vector<ServiceWatch> watches;
  for (const ServiceChange& change : changes)
    watches.emplace_back(change, flags.Monitor(), progress, terminal);
  int status = 0;
  for (;;) {
    const auto left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now());
    if (!LookOnce(client, left.count(), watches, &status, out, err)) return 1;
    if (watches.empty()) return status;
    // The monitor period ends by itself; --timeout bounds converging.
    const bool late = std::chrono::steady_clock::now() >= deadline;
    if (late && std::any_of(watches.begin(), watches.end(),
                            [](const ServiceWatch& w) { return !w.verifying(); })) {
      for (const ServiceWatch& w : watches)
        if (!w.verifying())
          err << "berth: " << w.service() << " has not converged after " << flags.timeout_s
              << " s; it goes on in berthd (berth service ps " << w.service() << ")\n";
      return 1;
    }
    // Restart delays or the monitor period are left: berthd's loop has
    // nothing to do meanwhile, so the wait reads again shortly.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int PostAndWait(const VerbContext& context, const std::string& id, const char* action,
                const WaitFlags& flags) {
  std::optional<Json> answer =
      CallOrSay(context.client, "POST", "/v1/services/" + id + "/" + action, nullptr, context.err);
  if (!answer) return 1;
  context.out << id << "\n";
  const ServiceChange change{id, answer->value("revision", int64_t{0}),
                             std::string(action) == "rollback"};
  return WaitForServices(context.client, {change}, flags, true, context.out, context.err,
                         context.terminal);
}

}  // namespace berth::cli
