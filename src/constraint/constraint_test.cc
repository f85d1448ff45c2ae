#include "constraint/constraint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace berth::constraint {
namespace {

Node SampleNode() {
  Node node;
  node.id = "node-1";
  node.hostname = "Web01";
  node.role = NodeRole::kManager;
  node.platform = Platform{"linux", "x86_64"};
  node.labels = {{"Zone", "East"}, {"disk", "ssd"}};
  node.engine_labels = {{"os", "Ubuntu"}};
  node.address = "192.168.1.10";
  return node;
}

// Parses `expression` (which must be valid) and matches it against `node`.
bool Eval(const std::string& expression, const Node& node) {
  Result<Constraint> c = Parse(expression);
  if (!c.ok()) {
    ADD_FAILURE() << "parse of '" << expression << "' failed: " << c.status().message();
    return false;
  }
  return Matches(*c, node);
}

std::string ParseError(const std::string& expression) {
  Result<Constraint> c = Parse(expression);
  EXPECT_FALSE(c.ok()) << expression;
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << expression;
  return c.status().message();
}

// ---- Parsing ----

TEST(ParseTest, SplitsKeyOperatorValue) {
  Result<Constraint> c = Parse("node.hostname==web01");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->key, "node.hostname");
  EXPECT_EQ(c->op, Op::kEqual);
  EXPECT_EQ(c->value, "web01");
  EXPECT_EQ(c->kind, Key::kNodeHostname);

  c = Parse("node.role!=manager");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->op, Op::kNotEqual);
  EXPECT_EQ(c->kind, Key::kNodeRole);
  EXPECT_EQ(c->value, "manager");
}

TEST(ParseTest, TrimsWhitespaceAroundKeyAndValue) {
  Result<Constraint> c = Parse("  \tnode.labels.zone \t ==  east \n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->key, "node.labels.zone");
  EXPECT_EQ(c->value, "east");
  EXPECT_EQ(c->label, "zone");
}

TEST(ParseTest, KeepsInnerWhitespaceOfValue) {
  Result<Constraint> c = Parse("node.labels.name == two words");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->value, "two words");
}

TEST(ParseTest, ClassifiesKeysCaseInsensitively) {
  const struct {
    const char* expression;
    Key kind;
  } cases[] = {
      {"NODE.ID==x", Key::kNodeId},
      {"Node.Hostname==x", Key::kNodeHostname},
      {"node.ROLE==x", Key::kNodeRole},
      {"Node.Ip==1.2.3.4", Key::kNodeIp},
      {"node.Platform.OS==x", Key::kPlatformOs},
      {"NODE.PLATFORM.ARCH==x", Key::kPlatformArch},
      {"Node.Labels.Zone==x", Key::kNodeLabel},
      {"ENGINE.LABELS.os==x", Key::kEngineLabel},
      {"node.name==x", Key::kUnknown},
      {"node.labels.==x", Key::kUnknown},
      {"engine.labels.==x", Key::kUnknown},
      {"node.labels==x", Key::kUnknown},
      {"node.platform==x", Key::kUnknown},
  };
  for (const auto& tc : cases) {
    Result<Constraint> c = Parse(tc.expression);
    ASSERT_TRUE(c.ok()) << tc.expression << ": " << c.status().message();
    EXPECT_EQ(c->kind, tc.kind) << tc.expression;
  }
}

TEST(ParseTest, LabelNameKeepsItsCase) {
  Result<Constraint> c = Parse("NODE.LABELS.Zone.Sub-1_x==a");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->kind, Key::kNodeLabel);
  EXPECT_EQ(c->label, "Zone.Sub-1_x");
  EXPECT_EQ(c->key, "NODE.LABELS.Zone.Sub-1_x");

  c = Parse("Engine.Labels.OS==a");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->kind, Key::kEngineLabel);
  EXPECT_EQ(c->label, "OS");
}

TEST(ParseTest, MissingOperatorError) {
  EXPECT_EQ(ParseError("node.role=manager"), "constraint expected one operator from ==, !=");
  EXPECT_EQ(ParseError(""), "constraint expected one operator from ==, !=");
  EXPECT_EQ(ParseError("node.role<>manager"), "constraint expected one operator from ==, !=");
}

TEST(ParseTest, EqualsIsLookedForBeforeNotEquals) {
  // "==" is found first, so the key is "a!" -- invalid.
  EXPECT_EQ(ParseError("a!==b"), "key 'a!' is invalid");
  // Even when "!=" comes earlier in the text.
  EXPECT_EQ(ParseError("ab!=c==d"), "key 'ab!=c' is invalid");
}

TEST(ParseTest, SplitsAtFirstOccurrence) {
  // The value "b==c" contains '=', which is not an allowed value character.
  EXPECT_EQ(ParseError("ab==b==c"), "value 'b==c' is invalid");
  EXPECT_EQ(ParseError("ab!=b!=c"), "value 'b!=c' is invalid");
}

TEST(ParseTest, InvalidKeyErrors) {
  EXPECT_EQ(ParseError("a==b"), "key 'a' is invalid");  // one character is too short
  EXPECT_EQ(ParseError("  ==b"), "key '' is invalid");
  EXPECT_EQ(ParseError("1node==b"), "key '1node' is invalid");
  EXPECT_EQ(ParseError(".node==b"), "key '.node' is invalid");
  EXPECT_EQ(ParseError(" node labels == b"), "key 'node labels' is invalid");
  EXPECT_EQ(ParseError("node/labels==b"), "key 'node/labels' is invalid");
}

TEST(ParseTest, ValidKeyShapes) {
  for (const char* expression : {"ab==x", "_a==x", "_.==x", "a-==x", "A9==x", "a.b-c_d.9==x"}) {
    Result<Constraint> c = Parse(expression);
    EXPECT_TRUE(c.ok()) << expression << ": " << c.status().message();
  }
}

TEST(ParseTest, InvalidValueErrors) {
  EXPECT_EQ(ParseError("node.role=="), "value '' is invalid");
  EXPECT_EQ(ParseError("node.role!=   "), "value '' is invalid");
  EXPECT_EQ(ParseError("node.labels.a == x,y "), "value 'x,y' is invalid");
  EXPECT_EQ(ParseError("node.labels.a==a@b"), "value 'a@b' is invalid");
  EXPECT_EQ(ParseError("node.labels.a==caf\xc3\xa9"), "value 'caf\xc3\xa9' is invalid");
  EXPECT_EQ(ParseError("node.labels.a==a\vb"), "value 'a\vb' is invalid");
}

TEST(ParseTest, ValueAllowsSwarmKitSpecialCharacters) {
  const std::string value = R"(aZ09:-_.*()?+[]\^$|/ x)";
  Result<Constraint> c = Parse("node.labels.weird==" + value);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->value, value);

  Node node;
  node.labels = {{"weird", "AZ09:-_.*()?+[]\\^$|/ X"}};
  EXPECT_TRUE(Matches(*c, node));
}

TEST(ParseTest, ValueCharactersAreNotGlobs) {
  Node node = SampleNode();
  EXPECT_FALSE(Eval("node.hostname==web*", node));
  EXPECT_FALSE(Eval("node.hostname==web..", node));
  EXPECT_TRUE(Eval("node.hostname!=web*", node));
}

TEST(ParseTest, PreParsesIpValues) {
  Result<Constraint> c = Parse("node.ip==10.0.0.1");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->ip_valid);
  EXPECT_EQ(c->prefix_bits, 128);
  const std::array<uint8_t, 16> mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  EXPECT_EQ(c->ip, mapped);

  c = Parse("node.ip==10.0.0.0/8");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->ip_valid);
  EXPECT_EQ(c->prefix_bits, 104);

  c = Parse("node.ip==2001:db8::/32");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->ip_valid);
  EXPECT_EQ(c->prefix_bits, 32);

  for (const char* bad : {"node.ip==10.0.0.0/33", "node.ip==::/129", "node.ip==10.0.0.0/",
                          "node.ip==10.0.0/8", "node.ip==not-an-ip", "node.ip==10.0.0.1/+8",
                          "node.ip==10.0.0.1 /8", "node.ip==1.2.3.4/8/8", "node.ip==/8"}) {
    c = Parse(bad);
    ASSERT_TRUE(c.ok()) << bad;  // malformed IPs parse, but never match
    EXPECT_FALSE(c->ip_valid) << bad;
  }
}

TEST(ParseTest, ParseAllReturnsFirstError) {
  Result<std::vector<Constraint>> all =
      ParseAll({"node.role==worker", "x==y", "node.id==", "no operator"});
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().message(), "key 'x' is invalid");

  all = ParseAll({"node.role==worker", "node.labels.a!=b"});
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].kind, Key::kNodeRole);
  EXPECT_EQ((*all)[1].kind, Key::kNodeLabel);

  all = ParseAll({});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST(ParseIpTest, MapsIpv4IntoIpv6) {
  std::array<uint8_t, 16> a{};
  std::array<uint8_t, 16> b{};
  ASSERT_TRUE(ParseIp("1.2.3.4", &a));
  ASSERT_TRUE(ParseIp("::ffff:1.2.3.4", &b));
  EXPECT_EQ(a, b);
  ASSERT_TRUE(ParseIp("2001:DB8::1", &a));
  ASSERT_TRUE(ParseIp("2001:db8:0::1", &b));
  EXPECT_EQ(a, b);
  EXPECT_FALSE(ParseIp("", &a));
  EXPECT_FALSE(ParseIp("1.2.3", &a));
  EXPECT_FALSE(ParseIp("1.2.3.4/32", &a));
  EXPECT_FALSE(ParseIp("host.example", &a));
}

// ---- Matching: string keys ----

TEST(MatchTest, NodeId) {
  Node node = SampleNode();
  EXPECT_TRUE(Eval("node.id==node-1", node));
  EXPECT_TRUE(Eval("NODE.ID==NODE-1", node));
  EXPECT_FALSE(Eval("node.id==node-2", node));
  EXPECT_FALSE(Eval("node.id==node", node));  // whole string, not prefix
  EXPECT_TRUE(Eval("node.id!=node-2", node));
  EXPECT_FALSE(Eval("node.id!=Node-1", node));
}

TEST(MatchTest, NodeHostname) {
  Node node = SampleNode();
  EXPECT_TRUE(Eval("node.hostname==web01", node));
  EXPECT_TRUE(Eval("node.hostname==WEB01", node));
  EXPECT_FALSE(Eval("node.hostname!=wEb01", node));
  EXPECT_FALSE(Eval("node.hostname==web02", node));
  EXPECT_TRUE(Eval("node.hostname!=web02", node));
}

TEST(MatchTest, MissingHostnameCountsAsEmpty) {
  Node node = SampleNode();
  node.hostname.clear();
  EXPECT_FALSE(Eval("node.hostname==web01", node));
  EXPECT_TRUE(Eval("node.hostname!=web01", node));
}

TEST(MatchTest, NodeRole) {
  Node node = SampleNode();
  node.role = NodeRole::kManager;
  EXPECT_TRUE(Eval("node.role==manager", node));
  EXPECT_TRUE(Eval("node.role==Manager", node));
  EXPECT_FALSE(Eval("node.role==worker", node));
  EXPECT_TRUE(Eval("node.role!=worker", node));
  EXPECT_FALSE(Eval("node.role!=MANAGER", node));

  node.role = NodeRole::kWorker;
  EXPECT_TRUE(Eval("node.role==worker", node));
  EXPECT_FALSE(Eval("node.role==manager", node));
  EXPECT_TRUE(Eval("node.role!=manager", node));
}

TEST(MatchTest, PlatformOsAndArch) {
  Node node = SampleNode();
  EXPECT_TRUE(Eval("node.platform.os==linux", node));
  EXPECT_TRUE(Eval("node.platform.os==LINUX", node));
  EXPECT_FALSE(Eval("node.platform.os!=Linux", node));
  EXPECT_FALSE(Eval("node.platform.os==windows", node));
  EXPECT_TRUE(Eval("node.platform.os!=windows", node));
  EXPECT_TRUE(Eval("node.platform.arch==x86_64", node));
  EXPECT_TRUE(Eval("node.platform.arch==X86_64", node));
  EXPECT_TRUE(Eval("node.platform.arch!=arm64", node));
}

TEST(MatchTest, ArchIsNotNormalised) {
  Node node = SampleNode();
  node.platform = Platform{"linux", "x86_64"};
  EXPECT_FALSE(Eval("node.platform.arch==amd64", node));
  EXPECT_TRUE(Eval("node.platform.arch!=amd64", node));

  node.platform = Platform{"linux", "aarch64"};
  EXPECT_FALSE(Eval("node.platform.arch==arm64", node));
  EXPECT_TRUE(Eval("node.platform.arch!=arm64", node));

  node.platform = Platform{"linux", "amd64"};
  EXPECT_FALSE(Eval("node.platform.arch==x86_64", node));
}

TEST(MatchTest, NodeWithoutPlatformHasEmptyOsAndArch) {
  Node node = SampleNode();
  node.platform.reset();
  EXPECT_FALSE(Eval("node.platform.os==linux", node));
  EXPECT_TRUE(Eval("node.platform.os!=linux", node));
  EXPECT_FALSE(Eval("node.platform.arch==x86_64", node));
  EXPECT_TRUE(Eval("node.platform.arch!=x86_64", node));
}

TEST(MatchTest, NodeLabels) {
  Node node = SampleNode();
  EXPECT_TRUE(Eval("node.labels.Zone==east", node));
  EXPECT_TRUE(Eval("NODE.LABELS.Zone==EAST", node));  // key prefix and value ignore case
  EXPECT_FALSE(Eval("node.labels.Zone!=East", node));
  EXPECT_FALSE(Eval("node.labels.Zone==west", node));
  EXPECT_TRUE(Eval("node.labels.Zone!=west", node));
  EXPECT_TRUE(Eval("node.labels.disk==SSD", node));
}

TEST(MatchTest, LabelNamesAreCaseSensitive) {
  Node node = SampleNode();
  // The node has "Zone", not "zone": the label is missing, so it reads as "".
  EXPECT_FALSE(Eval("node.labels.zone==east", node));
  EXPECT_TRUE(Eval("node.labels.zone!=east", node));
  EXPECT_FALSE(Eval("engine.labels.OS==ubuntu", node));
  EXPECT_TRUE(Eval("engine.labels.OS!=ubuntu", node));
}

TEST(MatchTest, MissingLabelCountsAsEmpty) {
  Node node = SampleNode();
  EXPECT_FALSE(Eval("node.labels.rack==r1", node));
  EXPECT_TRUE(Eval("node.labels.rack!=r1", node));
  EXPECT_FALSE(Eval("engine.labels.kernel==6", node));
  EXPECT_TRUE(Eval("engine.labels.kernel!=6", node));
}

TEST(MatchTest, NodeLabelsAndEngineLabelsAreSeparate) {
  Node node = SampleNode();
  EXPECT_FALSE(Eval("engine.labels.disk==ssd", node));
  EXPECT_FALSE(Eval("node.labels.os==ubuntu", node));
}

TEST(MatchTest, EngineLabels) {
  Node node = SampleNode();
  EXPECT_TRUE(Eval("engine.labels.os==ubuntu", node));
  EXPECT_TRUE(Eval("Engine.Labels.os==UBUNTU", node));
  EXPECT_FALSE(Eval("engine.labels.os!=Ubuntu", node));
  EXPECT_FALSE(Eval("engine.labels.os==centos", node));
  EXPECT_TRUE(Eval("engine.labels.os!=centos", node));
}

TEST(MatchTest, EmptyLabelValueEqualsNothingButDiffersFromText) {
  Node node = SampleNode();
  node.labels["empty"] = "";
  EXPECT_FALSE(Eval("node.labels.empty==x", node));
  EXPECT_TRUE(Eval("node.labels.empty!=x", node));
}

TEST(MatchTest, UnknownKeyFailsBothOperators) {
  Node node = SampleNode();
  EXPECT_FALSE(Eval("node.name==web01", node));
  EXPECT_FALSE(Eval("node.name!=web01", node));
  EXPECT_FALSE(Eval("node.labels.==x", node));
  EXPECT_FALSE(Eval("node.labels.!=x", node));
  EXPECT_FALSE(Eval("engine.labels.==x", node));
  EXPECT_FALSE(Eval("engine.labels.!=x", node));
}

// ---- Matching: node.ip ----

TEST(MatchIpTest, PlainIpv4) {
  Node node = SampleNode();
  node.address = "192.168.1.10";
  EXPECT_TRUE(Eval("node.ip==192.168.1.10", node));
  EXPECT_FALSE(Eval("node.ip!=192.168.1.10", node));
  EXPECT_FALSE(Eval("node.ip==192.168.1.11", node));
  EXPECT_TRUE(Eval("node.ip!=192.168.1.11", node));
  EXPECT_TRUE(Eval("node.ip==::ffff:192.168.1.10", node));  // same address, v6 spelling
}

TEST(MatchIpTest, PlainIpv6) {
  Node node = SampleNode();
  node.address = "2001:db8::10";
  EXPECT_TRUE(Eval("node.ip==2001:DB8:0:0::10", node));
  EXPECT_FALSE(Eval("node.ip!=2001:db8::10", node));
  EXPECT_FALSE(Eval("node.ip==2001:db8::11", node));
  EXPECT_TRUE(Eval("node.ip!=2001:db8::11", node));
  EXPECT_FALSE(Eval("node.ip==192.168.1.10", node));
}

TEST(MatchIpTest, Ipv4Cidr) {
  Node node = SampleNode();
  node.address = "192.168.1.10";
  EXPECT_TRUE(Eval("node.ip==192.168.1.0/24", node));
  EXPECT_FALSE(Eval("node.ip!=192.168.1.0/24", node));
  EXPECT_TRUE(Eval("node.ip==192.168.0.0/16", node));
  EXPECT_TRUE(Eval("node.ip==192.168.1.8/29", node));   // .8 - .15
  EXPECT_FALSE(Eval("node.ip==192.168.1.0/29", node));  // .0 - .7
  EXPECT_TRUE(Eval("node.ip!=192.168.1.0/29", node));
  EXPECT_FALSE(Eval("node.ip==10.0.0.0/8", node));
  EXPECT_TRUE(Eval("node.ip!=10.0.0.0/8", node));
  EXPECT_TRUE(Eval("node.ip==0.0.0.0/0", node));
  EXPECT_TRUE(Eval("node.ip==192.168.1.10/32", node));
  EXPECT_FALSE(Eval("node.ip==192.168.1.11/32", node));
  EXPECT_TRUE(Eval("node.ip==192.168.1.99/24", node));  // host bits in the value are ignored

  node.address = "2001:db8::1";  // an IPv6 node is outside every IPv4 range
  EXPECT_FALSE(Eval("node.ip==0.0.0.0/0", node));
  EXPECT_TRUE(Eval("node.ip!=0.0.0.0/0", node));
}

TEST(MatchIpTest, Ipv6Cidr) {
  Node node = SampleNode();
  node.address = "2001:db8:abcd::5";
  EXPECT_TRUE(Eval("node.ip==2001:db8::/32", node));
  EXPECT_FALSE(Eval("node.ip!=2001:db8::/32", node));
  EXPECT_TRUE(Eval("node.ip==2001:db8:abc0::/44", node));
  EXPECT_FALSE(Eval("node.ip==2001:db8:abc0::/48", node));
  EXPECT_TRUE(Eval("node.ip!=2001:db8:abc0::/48", node));
  EXPECT_FALSE(Eval("node.ip==2001:db9::/32", node));
  EXPECT_TRUE(Eval("node.ip==::/0", node));
  EXPECT_TRUE(Eval("node.ip==2001:db8:abcd::5/128", node));
}

TEST(MatchIpTest, MalformedValueFailsBothOperators) {
  Node node = SampleNode();
  for (const char* value : {"192.168.1", "192.168.1.0/33", "2001:db8::/129", "web01",
                            "192.168.1.0/", "192.168.1.0/abc"}) {
    EXPECT_FALSE(Eval(std::string("node.ip==") + value, node)) << value;
    EXPECT_FALSE(Eval(std::string("node.ip!=") + value, node)) << value;
  }
}

TEST(MatchIpTest, NodeWithoutUsableAddressIsNotInside) {
  Node node = SampleNode();
  for (const char* address : {"", "not-an-ip", "192.168.1.10:2377"}) {
    node.address = address;
    EXPECT_FALSE(Eval("node.ip==192.168.1.10", node)) << address;
    EXPECT_TRUE(Eval("node.ip!=192.168.1.10", node)) << address;
    EXPECT_FALSE(Eval("node.ip==0.0.0.0/0", node)) << address;
    EXPECT_TRUE(Eval("node.ip!=0.0.0.0/0", node)) << address;
  }
  // A malformed value still fails both operators on such a node.
  node.address = "";
  EXPECT_FALSE(Eval("node.ip==bogus", node));
  EXPECT_FALSE(Eval("node.ip!=bogus", node));
}

// ---- MatchesAll ----

TEST(MatchesAllTest, AndsEveryConstraint) {
  Node node = SampleNode();
  Result<std::vector<Constraint>> all =
      ParseAll({"node.role==manager", "node.labels.Zone==east", "node.ip==192.168.0.0/16"});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_TRUE(MatchesAll(*all, node));

  all = ParseAll({"node.role==manager", "node.labels.Zone==west"});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_FALSE(MatchesAll(*all, node));

  all = ParseAll({"node.role==manager", "node.unknown!=x"});
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_FALSE(MatchesAll(*all, node));
}

TEST(MatchesAllTest, EmptyListPasses) {
  EXPECT_TRUE(MatchesAll({}, SampleNode()));
  EXPECT_TRUE(MatchesAll({}, Node{}));
}

}  // namespace
}  // namespace berth::constraint
