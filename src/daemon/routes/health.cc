// berthd itself: /v1/health and /metrics (docs/api.md, "Endpoints" and "Metrics").
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/daemon.h"
#include "daemon/routes/routes.h"

namespace berth::daemon {

// ?wait=settled[&timeout=SECONDS] answers once the control loop has acted
// on every change made before the request (503 if it has not in time, or
// when this replica does not run the loop). With etcd the answer names the
// leader and its epoch.
Result<ApiResponse> Daemon::Health(const ApiRequest& r) {
  if (leadership_ != nullptr) {
    // One read of etcd: the revision shown, and waited for, is then the
    // latest of every replica's writes, not only this one's.
    Result<std::optional<store::StoredObject>> leader =
        store_->Get(Leadership::kKind, Leadership::kId);
    if (!leader.ok()) return leader.status();
  }
  if (r.Query("wait") == "settled") {
    char* rest = nullptr;
    const std::string timeout = r.Query("timeout");
    const double seconds = timeout.empty() ? 30 : std::strtod(timeout.c_str(), &rest);
    if (!timeout.empty() && (*rest != '\0' || !(seconds >= 0 && seconds <= 600)))
      return Status::InvalidArgument("timeout: expected seconds between 0 and 600, got '" +
                                     timeout + "'");
    if (!leading()) return NotLeading();
    const Duration wait{static_cast<int64_t>(seconds * 1000)};
    // A shared store's changes reach the loop through its feed: first wait
    // for the feed to bring what this request may follow.
    if (!store_->WaitDelivered(store_->revision(), wait) || !loop_->WaitSettled(wait))
      return Status::Unavailable("the control loop has not settled within " +
                                 (timeout.empty() ? std::string("30") : timeout) + " s");
  }
  Json health{{"status", "ok"}, {"revision", store_->revision()}};
  if (leadership_ != nullptr) {
    const Leadership::View view = leadership_->view();
    health["role"] = view.leading ? "leader" : "follower";
    health["leader"] =
        view.leader_id.empty()
            ? Json(nullptr)
            : Json{{"id", view.leader_id}, {"address", view.leader_address}, {"epoch", view.epoch}};
  } else {
    health["role"] = "single";
  }
  return Answer(std::move(health));
}

namespace {

// The gauges of the control loop's counts (the leader's: a follower runs
// no loop).
void AddCountGauges(const CountsSnapshot& counts, api::MetricsText& metrics) {
  // Every pair, so a series reads 0 rather than vanishing; a node whose
  // stored body is not valid has no state to count.
  constexpr size_t kStates = 4, kAvailabilities = 3;
  double nodes[kStates][kAvailabilities] = {};
  counts.ForEachNode([&](const NodeRow& row) {
    if (row.node && row.error.empty())
      nodes[static_cast<size_t>(row.node->state)][static_cast<size_t>(row.node->availability)] += 1;
  });
  std::vector<std::pair<std::string, double>> samples;
  for (size_t s = 0; s < kStates; ++s)
    for (size_t a = 0; a < kAvailabilities; ++a)
      samples.emplace_back(
          api::MetricLabel("state", ToString(static_cast<NodeState>(s))) + "," +
              api::MetricLabel("availability", ToString(static_cast<NodeAvailability>(a))),
          nodes[s][a]);
  metrics.AddLabeled("berth_nodes", "Nodes by state and availability.", "gauge", samples);
  samples.clear();
  for (size_t s = 0; s < kTaskStates; ++s)
    samples.emplace_back(api::MetricLabel("state", ToString(static_cast<TaskState>(s))),
                         static_cast<double>(counts.tasks_by_state[s]));
  metrics.AddLabeled("berth_tasks", "Stored tasks by state.", "gauge", samples);
  samples.clear();
  for (size_t r = 0; r < kPendingReasons; ++r)
    samples.emplace_back(api::MetricLabel("reason", ToString(static_cast<PendingReason>(r))),
                         static_cast<double>(counts.pending_by_reason[r]));
  metrics.AddLabeled("berth_tasks_pending",
                     "Tasks waiting for a node (new or pending, meant to run), by reason.", "gauge",
                     samples);
  const Json admission = Json::parse(counts.admission, nullptr, false);
  if (!admission.is_object() || !admission.contains("classes")) return;
  for (const auto& [field, help] :
       {std::pair{"running", "Running tasks of each fair-share class's jobs."},
        {"entitlement", "Workers each fair-share class is entitled to now."},
        {"waiting", "Tasks of each fair-share class's jobs waiting for admission."}}) {
    samples.clear();
    for (const auto& [name, c] : admission["classes"].items())
      samples.emplace_back(api::MetricLabel("class", name), c.value(field, 0.0));
    const std::string metric = std::string("berth_class_") + field;
    metrics.AddLabeled(metric.c_str(), help, "gauge", samples);
  }
}

}  // namespace

ApiResponse Daemon::Metrics() const {
  const api::ApiCounters& c = server_->counters();
  api::MetricsText metrics;
  metrics.Add("berth_http_requests_total", "HTTP requests answered.", c.requests.load());
  metrics.Add("berth_http_unauthorized_total", "Requests refused for a missing or wrong token.",
              c.unauthorized.load());
  metrics.Add("berth_http_client_errors_total", "Requests answered with a 4xx status.",
              c.client_errors.load());
  metrics.Add("berth_http_server_errors_total", "Requests answered with a 5xx status.",
              c.server_errors.load());
  metrics.Add("berth_control_passes_total", "Control-loop passes run.", loop_->passes());
  metrics.AddHistograms("berth_control_pass_duration_seconds",
                        "Wall time of each control-loop pass, its commits included.",
                        {{"", &loop_->pass_durations()}});
  metrics.AddHistograms("berth_engine_group_duration_seconds",
                        "The full-view engine's time on each group of identical tasks it "
                        "searched: a service version's pending tasks, a run of identical job "
                        "tasks, or one job task with preferences (none with --agent).",
                        {{"", &reconciler_.engine_group_durations()}});
  metrics.AddHistograms("berth_task_create_to_assigned_seconds",
                        "From a task's creation (a job task's: its job's submission) to its first "
                        "assignment to a node, as the control loop stored it.",
                        {{"", &reconciler_.create_to_assigned()}});
  metrics.AddHistograms("berth_task_create_to_running_seconds",
                        "From a task's creation (a job task's: its job's submission) to its first "
                        "run.",
                        {{"", &reconciler_.create_to_running()}});
  metrics.Add("berth_control_tasks_visited_total",
              "Tasks the control-loop passes looked at (a pass visits what changed).",
              loop_->tasks_visited());
  metrics.Add("berth_control_pass_errors_total", "Control-loop passes that failed.",
              loop_->pass_errors());
  if (agent_placement_) {
    const AgentPlacementCounters& a = agent_placement_->counters();
    metrics.Add("berth_agent_submitted_total", "Tasks handed to the three-phase scheduler.",
                a.submitted.load());
    metrics.Add("berth_agent_bound_total", "Tasks an agent bound.", a.bound.load());
    metrics.Add("berth_agent_failed_total", "Tasks no agent could place (all attempts).",
                a.failed.load());
    metrics.Add("berth_agent_released_total", "Bindings released on agents.", a.released.load());
    metrics.Add("berth_agent_release_errors_total", "Releases that did not reach their agent.",
                a.release_errors.load());
    metrics.Add("berth_agent_stray_released_total",
                "Bindings released because no stored task held them.", a.stray_released.load());
    metrics.Add("berth_agent_rebound_total",
                "Stored tasks an agent no longer held (restarted) that were bound again.",
                a.rebound.load());
    metrics.Add("berth_agent_lost_total",
                "Stored tasks an agent no longer held and could not bind again (failed).",
                a.lost.load());
    metrics.Add("berth_agent_skips_total",
                "Times an agent was left out for a while after failing calls in a row.",
                agent_placement_->agent_skips());
  }
  metrics.Add("berth_node_heartbeats_total", "Heartbeats of berth-node machines taken.",
              dispatcher_->heartbeats());
  metrics.Add("berth_node_sessions", "berth-node sessions (gRPC streams) open now.",
              sessions_ ? sessions_->open() : 0, "gauge");
  if (sessions_)
    metrics.AddHistograms("berth_node_heartbeat_round_trip_seconds",
                          "How long berth-node machines waited for berthd's answer to a heartbeat "
                          "on their session, as they measured it.",
                          {{"", &sessions_->heartbeat_round_trips()}});
  metrics.Add("berth_store_lists_total",
              "Times the control loop read the whole state: when it starts leading, after a "
              "failed pass, after its change feed was lost.",
              store_->lists());
  metrics.Add("berth_store_api_writes_total",
              "Batches of writes sent to the store by API requests and node sessions.",
              store_->batches_committed());
  metrics.Add("berth_store_api_commits_total",
              "Store commits that carried them: fewer when several are grouped into one (on "
              "etcd), more when a refused group is committed again in halves.",
              store_->groups_committed());
  metrics.Add("berth_store_cached_lists_total",
              "Lists answered from this replica's read cache instead of etcd.",
              store_->read_cache() != nullptr ? store_->read_cache()->served() : 0);
  metrics.Add("berth_store_revision", "Revision of the last committed store transaction.",
              static_cast<uint64_t>(store_->revision()), "gauge");
  metrics.AddHistograms("berth_store_commit_duration_seconds",
                        "Wall time of each store commit (an fsync on SQLite, a raft round on "
                        "etcd): API writes, node sessions and the control loop's.",
                        {{"", &store_->commit_durations()}});
  metrics.AddHistograms("berth_http_request_duration_seconds",
                        "Time to answer an API request, by method, route and status code (until "
                        "the answer is ready to send; for an event stream, its setup).",
                        server_->request_durations().All());
  metrics.Add("berth_events_recorded_total", "Events recorded for GET /v1/events.",
              events_->recorded());
  metrics.Add("berth_event_streams", "GET /v1/events streams open now.",
              static_cast<uint64_t>(std::max(0, event_streams_.load())), "gauge");
  const Leadership::View view =
      leadership_ != nullptr ? leadership_->view() : Leadership::View{true, 0, "", ""};
  metrics.Add("berth_leader", "1 while this replica runs the control loop (always without etcd).",
              view.leading ? 1 : 0, "gauge");
  metrics.Add("berth_leader_epoch",
              "The epoch of the leader this replica knows (0: none, or no etcd).",
              static_cast<uint64_t>(std::max<int64_t>(0, view.epoch)), "gauge");
  if (leadership_ != nullptr) {
    metrics.AddLabeled(
        "berth_leader_lease_unconfirmed_max_seconds",
        "The longest this replica, leading, went without a keepalive of its lease "
        "that etcd confirmed; it steps down past 23/24 of --leader-ttl.",
        "gauge", {{"", static_cast<double>(leadership_->longest_unconfirmed().count()) / 1000}});
    metrics.Add("berth_leader_lease_proofs_total",
                "Times etcd's raft state (a new etcd leader seen while keepalives failed) "
                "proved this replica's lease lasts past its last confirmed keepalive.",
                leadership_->lease_proofs());
  }
  if (const std::shared_ptr<const CountsSnapshot> counts = Counts())
    AddCountGauges(*counts, metrics);
  metrics.AddLabeled("berth_build_info", "The version of this berthd; always 1.", "gauge",
                     {{"version=\"" BERTH_VERSION "\"", 1}});
  return metrics.Response();
}

}  // namespace berth::daemon
