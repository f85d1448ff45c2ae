// Decoding of placement documents (with the node and template decoders they
// use) and encoding of the plan output.
#include "api/plan_codec.h"

#include <gtest/gtest.h>

#include "api/cluster_codec.h"
#include "api/document.h"

namespace berth::api {
namespace {

const Timestamp kDefaultNow = Timestamp{Duration{1'700'000'000'000}};

Result<PlacementPlanInput> Decode(std::string_view text) {
  Result<nlohmann::json> doc = ParseDocumentText(text);
  if (!doc.ok()) return doc.status();
  return DecodePlacementDocument(*doc, kDefaultNow);
}

std::string ErrorOf(std::string_view text) {
  Result<PlacementPlanInput> r = Decode(text);
  if (r.ok()) return "<decoded>";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

std::vector<std::string> TaskIds(const PlacementPlanInput& in) {
  std::vector<std::string> ids;
  for (const PlannedTask& t : in.tasks) ids.push_back(t.task.id);
  return ids;
}

TEST(DecodePlacement, NodeDefaultsAndFullNode) {
  auto in = Decode(R"({"nodes": [{"id": "a"},
    {"id": "b", "hostname": "h", "role": "manager", "state": "down", "availability": "drain",
     "platform": {"os": "linux", "arch": "x86_64"},
     "resources": {"cpu": "1500m", "memory": "8Gi", "generic": {"gpu": 2, "ssd": ["s-b", "s-a"]}},
     "labels": {"az": "az1"}, "engine_labels": {"os": "ubuntu"},
     "plugins": [{"type": "network", "name": "overlay"}], "address": "10.0.0.1"}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->now, kDefaultNow);
  const Node& a = in->nodes[0];
  EXPECT_EQ(a.role, NodeRole::kWorker);
  EXPECT_EQ(a.state, NodeState::kReady);
  EXPECT_EQ(a.availability, NodeAvailability::kActive);
  EXPECT_FALSE(a.platform.has_value());
  const Node& b = in->nodes[1];
  EXPECT_EQ(b.role, NodeRole::kManager);
  EXPECT_EQ(b.state, NodeState::kDown);
  EXPECT_EQ(b.availability, NodeAvailability::kDrain);
  EXPECT_EQ(b.platform, (Platform{"linux", "x86_64"}));
  EXPECT_EQ(b.resources.milli_cpu, 1500);
  EXPECT_EQ(b.resources.memory_bytes, 8LL << 30);
  ASSERT_EQ(b.resources.generic.size(), 2u);
  EXPECT_EQ(b.resources.generic[0], (NodeGenericResource{"gpu", false, 2, {}}));
  EXPECT_EQ(b.resources.generic[1], (NodeGenericResource{"ssd", true, 0, {"s-a", "s-b"}}));
  EXPECT_EQ(b.labels.at("az"), "az1");
  EXPECT_EQ(b.engine_labels.at("os"), "ubuntu");
  EXPECT_EQ(b.plugins, (std::vector<PluginRef>{{"network", "overlay"}}));
  EXPECT_EQ(b.address, "10.0.0.1");
}

TEST(DecodePlacement, ServiceTemplateIsSharedAndInherited) {
  auto in = Decode(R"({"now": "2026-01-01T00:10:00Z", "nodes": [{"id": "n1"}],
    "services": [{"id": "s1", "spec_version": 3, "replicas": 2,
      "task": {"resources": {"cpu": 0.5, "memory": "512Mi", "generic": {"gpu": 1}},
               "constraints": ["node.labels.az==az1"],
               "preferences": [{"spread": "Node.Labels.az"}],
               "platforms": [{"os": "linux", "arch": "amd64"}],
               "ports": [{"protocol": "udp", "published": 8080, "mode": "host"}],
               "max_replicas_per_node": 2, "networks": ["overlay"],
               "volume_drivers": ["nfs"], "log_driver": "syslog"}}],
    "tasks": [{"id": "t1", "service": "s1", "node": "n1", "state": "running"}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(FormatRfc3339(in->now), "2026-01-01T00:10:00Z");
  ASSERT_EQ(TaskIds(*in), (std::vector<std::string>{"t1", "s1.1"}));
  const Task& listed = in->tasks[0].task;
  const Task& made = in->tasks[1].task;
  EXPECT_EQ(listed.spec, made.spec);  // one spec for the whole service version
  EXPECT_EQ(listed.spec_version, 3u);
  EXPECT_EQ(made.spec_version, 3u);
  EXPECT_EQ(made.state, TaskState::kPending);
  EXPECT_TRUE(made.node_id.empty());
  const TaskSpec& spec = *made.spec;
  EXPECT_EQ(spec.reservations.milli_cpu, 500);
  EXPECT_EQ(spec.reservations.memory_bytes, 512LL << 20);
  EXPECT_EQ(spec.reservations.generic, (std::vector<GenericRequest>{{"gpu", 1}}));
  EXPECT_EQ(spec.constraints, (std::vector<std::string>{"node.labels.az==az1"}));
  // The prefix is normalised; the label key keeps its case.
  ASSERT_EQ(spec.preferences.size(), 1u);
  EXPECT_EQ(spec.preferences[0].descriptor, "node.labels.az");
  EXPECT_EQ(spec.preferences[0].kind, PlacementPreference::Kind::kSpread);
  EXPECT_EQ(spec.platforms, (std::vector<Platform>{{"linux", "amd64"}}));
  EXPECT_EQ(spec.ports, (std::vector<PortSpec>{{Protocol::kUdp, 8080, true}}));
  EXPECT_EQ(spec.max_replicas_per_node, 2u);
  EXPECT_EQ(spec.networks, (std::vector<std::string>{"overlay"}));
  EXPECT_EQ(spec.volume_drivers, (std::vector<std::string>{"nfs"}));
  EXPECT_EQ(spec.log_driver, "syslog");
}

TEST(DecodePlacement, PreferencesKeepTheirOrderAndSoftConstraintsGoApart) {
  auto in = Decode(R"({"nodes": [{"id": "n1"}], "services": [{"id": "s1", "replicas": 1,
      "task": {"preferences": [{"spread": "node.labels.dc", "weights": {"west": 1, "east": 3, "*": 2}},
                               {"prefer": "node.labels.disk==ssd"},
                               {"pack": "engine.labels.rack"}, {"pack": "NODE.ID"}]}}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  const TaskSpec& spec = *in->tasks[0].task.spec;
  ASSERT_EQ(spec.preferences.size(), 3u);
  EXPECT_EQ(spec.preferences[0].kind, PlacementPreference::Kind::kSpread);
  EXPECT_EQ(spec.preferences[0].weights,
            (std::vector<std::pair<std::string, uint32_t>>{{"east", 3}, {"west", 1}}));
  EXPECT_EQ(spec.preferences[0].other_weight, 2u);
  EXPECT_EQ(spec.preferences[1].kind, PlacementPreference::Kind::kPack);
  EXPECT_EQ(spec.preferences[1].descriptor, "engine.labels.rack");
  EXPECT_EQ(spec.preferences[2].descriptor, "node.id");
  EXPECT_TRUE(spec.preferences[2].IsNodeId());
  EXPECT_EQ(spec.preferred_constraints, (std::vector<std::string>{"node.labels.disk==ssd"}));
}

TEST(DecodePlacement, AffinitiesReadServiceAntiAndSoft) {
  auto in = Decode(R"({"nodes": [{"id": "n1"}], "services": [{"id": "s1", "replicas": 1,
      "task": {"affinity": [{"service": "db"}, {"service": "s1", "anti": true, "soft": true}]}}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->tasks[0].task.spec->affinities,
            (std::vector<ServiceAffinity>{{"db", false, false}, {"s1", true, true}}));
}

TEST(DecodePlacement, ReplicasFillTheLowestFreeSlots) {
  // s.2 is taken by a running task, s.4 by a failed one (its id stays used);
  // the failed task does not fill a slot, the running and pending ones do.
  auto in = Decode(R"({"nodes": [{"id": "n"}],
    "services": [{"id": "s", "replicas": 5}],
    "tasks": [{"id": "s.2", "service": "s", "node": "n", "state": "running"},
              {"id": "s.4", "service": "s", "node": "n", "state": "failed"},
              {"id": "x", "service": "s", "state": "pending"},
              {"id": "old", "service": "s", "node": "n", "state": "running",
               "desired_state": "shutdown"}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(TaskIds(*in),
            (std::vector<std::string>{"s.2", "s.4", "x", "old", "s.1", "s.3", "s.5"}));
}

TEST(DecodePlacement, ReplicasAreBoundedSoADocumentCannotExhaustMemory) {
  EXPECT_TRUE(Decode(R"({"services": [{"id": "s", "replicas": 1000000}]})").ok());
  EXPECT_EQ(Decode(R"({"services": [{"id": "s", "replicas": 1000001}]})").status().message(),
            "services[0].replicas: at most 1000000 replicas, got 1000001");
}

TEST(DecodePlacement, ReplicatedServiceWithoutReplicasHasExactlyTheListedTasks) {
  auto in = Decode(R"({"services": [{"id": "s"}],
    "tasks": [{"id": "a", "service": "s", "state": "pending"}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(TaskIds(*in), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(in->tasks[0].task.spec_version.has_value());  // no version: never batched
}

TEST(DecodePlacement, GlobalServiceGetsOnePreassignedTaskPerUncoveredNode) {
  auto in = Decode(R"({"nodes": [{"id": "n1"}, {"id": "n2"}, {"id": "n3"}],
    "services": [{"id": "g", "mode": "global", "spec_version": 1}],
    "tasks": [{"id": "g-on-n2", "service": "g", "node": "n2", "state": "running"}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(TaskIds(*in), (std::vector<std::string>{"g-on-n2", "g.n1", "g.n3"}));
  EXPECT_EQ(in->tasks[1].task.node_id, "n1");
  EXPECT_TRUE(in->tasks[1].preassigned);
  EXPECT_EQ(in->tasks[1].task.state, TaskState::kPending);
  EXPECT_EQ(in->tasks[2].task.node_id, "n3");
}

TEST(DecodePlacement, AGlobalTaskThatEndedLeavesItsIdAndTheNodeGetsANumberedOne) {
  auto in = Decode(R"({"nodes": [{"id": "n1"}],
    "services": [{"id": "g", "mode": "global", "spec_version": 1}],
    "tasks": [{"id": "g.n1", "service": "g", "node": "n1", "state": "failed"},
              {"id": "g.n1.2", "service": "g", "node": "n1", "state": "shutdown"}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(TaskIds(*in), (std::vector<std::string>{"g.n1", "g.n1.2", "g.n1.3"}));
  EXPECT_EQ(in->tasks[2].task.node_id, "n1");
  EXPECT_EQ(in->tasks[2].task.state, TaskState::kPending);
}

TEST(DecodePlacement, ListedTasksKeepTheirOwnVersionAndTimes) {
  auto in = Decode(R"({"nodes": [{"id": "n1"}], "services": [{"id": "s", "spec_version": 2}],
    "tasks": [{"id": "f", "service": "s", "node": "n1", "state": "failed", "spec_version": 1,
               "updated_at": "2026-01-01T00:08:00Z"},
              {"id": "p", "service": "s", "node": "n1", "state": "pending"},
              {"id": "one-off", "task": {"resources": {"cpu": 1}}}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in->tasks[0].task.spec_version, 1u);
  EXPECT_EQ(FormatRfc3339(in->tasks[0].task.updated_at), "2026-01-01T00:08:00Z");
  EXPECT_TRUE(in->tasks[1].preassigned);  // pending with a node
  EXPECT_FALSE(in->tasks[0].preassigned);
  const Task& one_off = in->tasks[2].task;
  EXPECT_TRUE(one_off.service_id.empty());
  EXPECT_EQ(one_off.state, TaskState::kPending);  // default state
  EXPECT_EQ(one_off.spec->reservations.milli_cpu, 1000);
}

TEST(DecodePlacement, UnknownFieldsNameTheirPath) {
  EXPECT_EQ(ErrorOf(R"({"nodez": []})"), "unknown field 'nodez'");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "colour": "red"}]})"),
            "nodes[0]: unknown field 'colour'");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "resources": {"disk": 1}}]})"),
            "nodes[0].resources: unknown field 'disk'");
  EXPECT_EQ(
      ErrorOf(R"({"services": [{"id": "s", "task": {"ports": [{"published": 1, "x": 1}]}}]})"),
      "services[0].task.ports[0]: unknown field 'x'");
  EXPECT_EQ(ErrorOf(R"({"tasks": [{"id": "t", "colour": 1}]})"),
            "tasks[0]: unknown field 'colour'");
}

TEST(DecodePlacement, InvalidValuesNameTheirPath) {
  EXPECT_EQ(ErrorOf(R"({"nodes": [{}]})"), "nodes[0]: missing field 'id'");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": ""}]})"), "nodes[0].id: must not be empty");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "state": "up"}]})"),
            "nodes[0].state: invalid node state 'up' (expected one of unknown, down, ready, "
            "disconnected)");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "labels": {"az": 1}}]})"),
            "nodes[0].labels.az: expected a string (quote the value), got number");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "address": "10.0.0"}]})"),
            "nodes[0].address: invalid IP address '10.0.0'");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "resources": {"generic": {"gpu": 0}}}]})"),
            "nodes[0].resources.generic.gpu: expected a positive count, got 0");
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a", "resources": {"generic": {"gpu": ["x", "x"]}}}]})"),
            "nodes[0].resources.generic.gpu[1]: duplicate name 'x'");
  EXPECT_EQ(ErrorOf(R"({"now": "yesterday"})").rfind("now: ", 0), 0u);
  EXPECT_EQ(ErrorOf(R"({"nodes": "a"})"), "nodes: expected a list, got string");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "s", "replicas": -1}]})"),
            "services[0].replicas: expected a non-negative integer, got -1");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "s", "replicas": 1.5}]})"),
            "services[0].replicas: expected a non-negative integer, got 1.5");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "s", "mode": "daemon"}]})"),
            "services[0].mode: invalid mode 'daemon' (expected one of replicated, global)");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "s", "mode": "global", "replicas": 2}]})"),
            "services[0].replicas: a global service has no replica count");
}

TEST(DecodePlacement, InvalidTemplatesNameTheirPath) {
  auto task = [](const std::string& body) {
    return ErrorOf(R"({"services": [{"id": "s", "task": )" + body + "}]}");
  };
  const std::string at = "services[0].task.";
  EXPECT_EQ(task(R"({"resources": {"memory": "8Gx"}})").rfind(at + "resources.memory: ", 0), 0u);
  EXPECT_EQ(task(R"({"resources": {"cpu": -1}})").rfind(at + "resources.cpu: ", 0), 0u);
  EXPECT_EQ(task(R"({"resources": {"generic": {"gpu": ["a"]}}})"),
            at + "resources.generic.gpu: expected a positive count (a task requests an amount, "
                 "not names), got array");
  EXPECT_EQ(task(R"({"constraints": ["node.labels.az=az1"]})"),
            at + "constraints[0]: constraint expected one operator from ==, !=");
  EXPECT_EQ(task(R"({"constraints": ["==x"]})"), at + "constraints[0]: key '' is invalid");
  EXPECT_EQ(task(R"({"preferences": [{"spread": "node.hostname"}]})"),
            at + "preferences[0].spread: unsupported descriptor 'node.hostname' (expected "
                 "node.labels.<label>, engine.labels.<label> or node.id)");
  EXPECT_EQ(task(R"({"preferences": [{"pack": "node.id"}, {"pack": "node.labels.rack"}]})"),
            at + "preferences[1]: a preference over node.id must be the last spread or pack");
  EXPECT_EQ(task(R"({"preferences": [{"spread": "node.labels.az", "pack": "node.id"}]})"),
            at + "preferences[0]: expected exactly one of 'spread', 'pack', 'prefer'");
  EXPECT_EQ(task(R"({"preferences": [{"pack": "node.labels.az", "weights": {"a": 1}}]})"),
            at + "preferences[0]: 'weights' goes only with 'spread'");
  EXPECT_EQ(task(R"({"preferences": [{"spread": "node.id", "weights": {"a": 1}}]})"),
            at + "preferences[0]: a spread over node.id takes no weights");
  EXPECT_EQ(task(R"({"preferences": [{"spread": "node.labels.az", "weights": {"a": 1.5}}]})"),
            at + "preferences[0].weights.a: expected a weight 0..1000000, got 1.5");
  EXPECT_EQ(task(R"({"preferences": [{"spread": "node.labels.az", "weights": {"a": 0}}]})"),
            at + "preferences[0].weights: at least one weight must be above 0");
  EXPECT_EQ(task(R"({"affinity": [{"anti": true}]})"), at + "affinity[0]: missing field 'service'");
  EXPECT_EQ(task(R"({"affinity": [{"service": "db", "hard": true}]})"),
            at + "affinity[0]: unknown field 'hard'");
  EXPECT_EQ(task(R"({"preferences": [{"prefer": "node.labels.disk=ssd"}]})"),
            at + "preferences[0].prefer: constraint expected one operator from ==, !=");
  std::string many = R"({"preferences": [)";
  for (int i = 0; i < 33; ++i) many += std::string(i ? "," : "") + R"({"prefer": "node.id==n"})";
  EXPECT_EQ(task(many + "]}"),
            at.substr(0, at.size() - 1) +
                ": at most 32 soft rules ('prefer' preferences and soft affinities), got 33");
  EXPECT_EQ(task(R"({"ports": [{"published": 70000}]})"),
            at + "ports[0].published: expected a port number 1..65535, got 70000");
  EXPECT_EQ(task(R"({"ports": [{"protocol": "icmp", "published": 1}]})"),
            at + "ports[0].protocol: invalid protocol 'icmp' (expected one of tcp, udp, sctp)");
  EXPECT_EQ(task(R"({"ports": [{"published": 80, "mode": "host"}, {"published": 80}]})"),
            at + "ports[1]: duplicate published port tcp/80");
  EXPECT_EQ(task(R"({"ports": [{"mode": "host"}]})"),
            at + "ports[0]: a port needs 'published' or 'target'");
}

// Plan documents are dry runs of SwarmKit's semantics: an ingress port is
// taken and books no node port. berthd's templates refuse it (defect 7).
TEST(DecodePlacement, IngressPortsAreTakenInPlansButRefusedInBerthdsTemplates) {
  auto in = Decode(R"({"nodes": [{"id": "a"}], "services": [{"id": "web", "replicas": 2,
    "task": {"ports": [{"published": 8080, "target": 80}, {"published": 9090, "mode": "ingress"}]}}]})");
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->tasks.size(), 2u);
  EXPECT_FALSE(in->tasks[0].task.spec->ports.at(0).OccupiesHostPort());

  auto refused = [](std::string_view task) {
    return RefuseIngressPorts(*ParseDocumentText(task), "task").message();
  };
  EXPECT_EQ(refused(R"({"ports": [{"published": 8080, "target": 80}]})"),
            "task.ports[0].mode: ingress mode (the default) publishes through a routing mesh, "
            "which Berth does not have: nothing would listen on port 8080 or route it to the "
            "tasks. Use \"mode\": \"host\", which books the published port on the node each "
            "task runs on (berth: --publish mode=host,target=80,published=8080)");
  EXPECT_EQ(refused(R"({"ports": [{"published": 53, "mode": "host", "protocol": "udp"},
                                   {"target": 53, "protocol": "udp", "mode": "ingress"}]})"),
            "task.ports[1].mode: ingress mode publishes through a routing mesh, which Berth "
            "does not have: nothing would listen on a published port or route it to the tasks. Use "
            "\"mode\": \"host\", which books the published port on the node each task runs "
            "on (berth: --publish mode=host,target=53,protocol=udp)");
  EXPECT_TRUE(RefuseIngressPorts(*ParseDocumentText(R"({"ports": [{"published": 8080,
    "target": 80, "mode": "host"}, {"target": 81, "mode": "host"}]})"),
                                 "task")
                  .ok());
  EXPECT_TRUE(RefuseIngressPorts(*ParseDocumentText(R"({"resources": {"cpu": 1}})"), "task").ok());
}

TEST(DecodePlacement, CrossReferencesAreChecked) {
  EXPECT_EQ(ErrorOf(R"({"nodes": [{"id": "a"}, {"id": "a"}]})"),
            "nodes[1].id: duplicate node id 'a'");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "s"}, {"id": "s"}]})"),
            "services[1].id: duplicate service id 's'");
  EXPECT_EQ(ErrorOf(R"({"tasks": [{"id": "t"}, {"id": "t"}]})"),
            "tasks[1].id: duplicate task id 't'");
  EXPECT_EQ(ErrorOf(R"({"tasks": [{"id": "t", "node": "ghost"}]})"),
            "tasks[0].node: unknown node 'ghost'");
  EXPECT_EQ(ErrorOf(R"({"tasks": [{"id": "t", "service": "ghost"}]})"),
            "tasks[0].service: unknown service 'ghost'");
  EXPECT_EQ(ErrorOf(R"({"tasks": [{"id": "t", "state": "running"}]})"),
            "tasks[0].node: a task in state running needs a node");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "s"}],
    "tasks": [{"id": "t", "service": "s", "task": {}}]})"),
            "tasks[0].task: a task of a service uses the service's template; remove 'task'");
  EXPECT_EQ(ErrorOf(R"({"services": [{"id": "g", "mode": "global"}],
    "tasks": [{"id": "t", "service": "g"}]})"),
            "tasks[0].node: a pending task of a global service needs a node");
}

TEST(NotScheduledReason, OnlyForTasksNotMeantToRun) {
  Task t;
  EXPECT_EQ(NotScheduledReason(t), "");
  t.desired_state = TaskState::kComplete;
  EXPECT_EQ(NotScheduledReason(t), "");
  t.desired_state = TaskState::kShutdown;
  EXPECT_EQ(NotScheduledReason(t), "not scheduled: desired state is shutdown");
}

// Loads a decoded document into an engine, runs one pass, encodes it.
nlohmann::ordered_json PlanOf(std::string_view text) {
  Result<PlacementPlanInput> in = Decode(text);
  EXPECT_TRUE(in.ok()) << in.status().message();
  if (!in.ok()) return {};
  placement::ClusterState state;
  for (const Node& n : in->nodes) EXPECT_TRUE(state.AddNode(n).ok());
  for (const PlannedTask& t : in->tasks) EXPECT_TRUE(state.AddTask(t.task, t.preassigned).ok());
  placement::Scheduler scheduler(state);
  placement::PassResult result = scheduler.SchedulePending(in->now);
  return EncodePlacementResult(*in, state, result);
}

TEST(EncodePlacement, AssignmentsThenPendingInInputOrder) {
  auto out = PlanOf(R"({"nodes": [{"id": "n1", "resources": {"memory": 100,
                                     "generic": {"gpu": ["g-b", "g-a"]}}}],
    "tasks": [{"id": "big", "task": {"resources": {"memory": 1000}}},
              {"id": "gone", "desired_state": "shutdown"},
              {"id": "gpu", "task": {"resources": {"generic": {"gpu": 2}}}},
              {"id": "done", "node": "n1", "state": "complete"}]})");
  EXPECT_EQ(
      out.dump(),
      R"x({"assignments":[{"task":"gpu","node":"n1","generic_resources":{"gpu":["g-a","g-b"]}}],)x"
      R"x("pending":[{"task":"big","reason":"no suitable node (insufficient resources on 1 node)"},)x"
      R"x({"task":"gone","reason":"not scheduled: desired state is shutdown"}]})x");
}

TEST(EncodePlacement, RecentFailuresInTheDocumentSortANodeLast) {
  // Five failures of s@1 on n1 within five minutes of "now": n1 is faulty for
  // s@1, so the new task goes to n2 although n2 already runs one.
  std::string tasks;
  for (int i = 0; i < 5; ++i)
    tasks +=
        R"({"id": "f)" + std::to_string(i) +
        R"(", "service": "s", "node": "n1", "state": "failed", "updated_at": "2026-01-01T00:06:00Z"},)";
  auto plan_at = [&](const std::string& now) {
    return PlanOf(R"({"now": ")" + now + R"(", "nodes": [{"id": "n1"}, {"id": "n2"}],
      "services": [{"id": "s", "spec_version": 1}],
      "tasks": [)" +
                  tasks + R"({"id": "r", "service": "s", "node": "n2", "state": "running"},
                {"id": "new", "service": "s"}]})");
  };
  auto out = plan_at("2026-01-01T00:10:00Z");
  EXPECT_EQ(out["assignments"].dump(), R"([{"task":"new","node":"n2"}])");
  // Six minutes later the failures are old: n1 (no task of s) wins again.
  auto later = plan_at("2026-01-01T00:11:01Z");
  EXPECT_EQ(later["assignments"].dump(), R"([{"task":"new","node":"n1"}])");
}

}  // namespace
}  // namespace berth::api
