// `berth service inspect`: the table form shows what docs/cli.md promises.
#include "cli/cli_test_support.h"
#include "cli/service/service.h"

namespace berth::cli {
namespace {

// The table form showed only ID MODE REPLICAS VERSION.
TEST_F(ClientCommandsTest, ServiceInspectShowsTheTemplatePoliciesAndUpdateStatus) {
  ASSERT_EQ(Run({"node", "add", "n1"}).status, 0);
  ASSERT_EQ(Run({"service",
                 "create",
                 "web",
                 "-d",
                 "--replicas",
                 "2",
                 "--reserve-cpu",
                 "0.5",
                 "--constraint",
                 "node.id==n1",
                 "--restart-condition",
                 "on-failure",
                 "--update-parallelism",
                 "2",
                 "-e",
                 "A=1",
                 "--",
                 "sh",
                 "-c",
                 "echo hi"})
                .status,
            0);
  ASSERT_EQ(Run({"service", "update", "web", "--reserve-cpu", "0.25", "--monitor", "0s",
                 "--update-monitor", "0s"})
                .status,
            0);
  Outcome inspect = Run({"service", "inspect", "web"});
  ASSERT_EQ(inspect.status, 0) << inspect.err;
  for (const char* line :
       {"ID:                  web\n", "Replicas:            2\n",
        "Spec version:        2 (update)\n", "Template:\n",
        " Command:            sh -c 'echo hi'\n", " Env:                A=1\n",
        " Reservations:       cpu 0.25\n", " Constraints:        node.id==n1\n", "RestartPolicy:\n",
        " Condition:          on-failure\n", "UpdateConfig:\n", " Parallelism:        2\n",
        " Monitoring period:  0s\n", "RollbackConfig:\n", "Rebalance:           manual\n",
        "UpdateStatus:\n", " State:              completed\n",
        " Message:            update completed\n"})
    EXPECT_NE(inspect.out.find(line), std::string::npos) << line << "in\n" << inspect.out;
}

TEST(PrintServiceDetail, WritesPreferencesAffinityAndPortsAsTheirFlags) {
  const Json service = Json::parse(R"({
      "id": "api", "mode": "global", "spec_version": 1,
      "task": {"preferences": [{"spread": "node.labels.az", "weights": {"a": 2, "b": 1}},
                               {"pack": "node.id"}, {"prefer": "node.labels.disk==ssd"}],
               "affinity": [{"service": "db", "soft": true}, {"service": "api", "anti": true}],
               "ports": [{"mode": "host", "target": 80, "published": 8080, "protocol": "udp"}],
               "max_replicas_per_node": 2}})");
  std::ostringstream out;
  PrintServiceDetail(service, out);
  for (const char* line :
       {"Mode:                global\n", " Command:            none (simulated)\n",
        " Preferences:        spread=node.labels.az:a=2,b=1, pack=node.id, "
        "prefer=node.labels.disk==ssd\n",
        " Affinity:           service==~db, service!=api\n",
        " Ports:              8080:80/udp (host)\n", " max_replicas_per_node: 2\n",
        "UpdateStatus:        none\n"})
    EXPECT_NE(out.str().find(line), std::string::npos) << line << "in\n" << out.str();
  EXPECT_EQ(out.str().find("Replicas:"), std::string::npos);
}

}  // namespace
}  // namespace berth::cli
