// Hostile request bodies against real berthd and berth-agent processes.
//
// About 3,000 bodies, made deterministically from one seed by one generator
// per kind (deep nesting, huge strings, invalid UTF-8, wrong types, odd
// top-level bodies, bad ids, mutations of valid bodies), go as raw bytes to
// every route that takes a body; then bodies at and just over the 1 MiB
// limit. Every request must be answered (the server is still there) with a
// status below 500. A refusal (4xx) must carry the JSON error shape of
// docs/api.md and change nothing: berthd's store revision (read once its
// control loop has settled) and the agent's bound and bindings counts stay as
// they were. An accepted body (a mutation may still be valid) is fine: the
// next request takes a new baseline.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "api/api_client.h"
#include "process.h"
#include "store/test_dir.h"
#include "tls/context.h"

namespace berth {
namespace {

using testing_support::FirstLine;
using testing_support::PortInLine;
using testing_support::Process;
using Json = nlohmann::json;
using Rng = std::mt19937_64;

constexpr uint64_t kSeed = 0x6265'7274'6830'0001;  // change it to explore other bodies
constexpr int kRounds = 38;           // bodies per generator and route: 38 * 7 * 11 = 2,926
constexpr size_t kMaxBody = 1 << 20;  // --max-body-bytes of both servers (the default)
constexpr int kMaxFailures = 20;      // then stop: enough to see what is wrong

// ---------------------------------------------------------------------------
// Routes and their bodies.
//
// A body "with a hole" has one '@' where a JSON text goes: a value, or an
// object key when ':' follows. The holes of a route reach every field of its
// body. Every node berthd may accept is down and drained (and so is the
// seeded n1): with no node to run on, no task starts, so none ends by itself
// a second later, a store write that no request made and that the "a refusal
// changes nothing" check would blame on the request. No hole is filled with
// "ready" or "active", and no mutation of at most three bytes turns "down"
// into "ready" or "drain" into "active".

enum class Target { kBerthd, kAgent };

struct Route {
  Target target;
  std::string method, path;
  std::vector<std::string> valid;     // accepted bodies: where mutations start
  std::vector<std::string> holes;     // every field, one hole each
  std::vector<std::string> id_holes;  // where an id or name goes
  std::string Name() const { return method + " " + path; }
};

std::vector<Route> Routes() {
  const std::string down = R"("state":"down","availability":"drain")";
  // {"id":"n2","state":"down","availability":"drain"<rest>}
  auto node = [&](const std::string& rest) { return R"({"id":"n2",)" + down + rest + "}"; };
  auto service = [](const std::string& rest) { return R"({"id":"s2","replicas":1)" + rest + "}"; };
  auto job = [](const std::string& rest) { return R"({"id":"j2","requestor":"r")" + rest + "}"; };
  return {
      {Target::kBerthd,
       "POST",
       "/v1/nodes",
       {R"({"id":"m1",)" + down +
            R"(,"hostname":"h1","role":"worker","platform":{"os":"linux","arch":"x86_64"},)"
            R"("resources":{"cpu":4,"memory":"8Gi","generic":{"gpu":2,"ssd":["s-a","s-b"]}},)"
            R"("labels":{"zone":"a"},"engine_labels":{"os":"debian"},)"
            R"("plugins":[{"type":"network","name":"overlay"}],"address":"10.0.0.1","slots":2})",
        R"({"id":"m2",)" + down + R"(,"resources":{"cpu":"500m","memory":1073741824}})"},
       {R"({"id":@,)" + down + "}",
        R"({"id":"n2","state":@,"availability":"drain"})",
        R"({"id":"n2","state":"down","availability":@})",
        node(R"(,"hostname":@)"),
        node(R"(,"role":@)"),
        node(R"(,"platform":@)"),
        node(R"(,"platform":{"os":@,"arch":"x86_64"})"),
        node(R"(,"resources":@)"),
        node(R"(,"resources":{"cpu":@,"memory":"8Gi"})"),
        node(R"(,"resources":{"cpu":4,"memory":@})"),
        node(R"(,"resources":{"generic":@})"),
        node(R"(,"resources":{"generic":{"gpu":@}})"),
        node(R"(,"resources":{"generic":{@:2}})"),
        node(R"(,"labels":@)"),
        node(R"(,"labels":{@:"v"})"),
        node(R"(,"labels":{"k":@})"),
        node(R"(,"engine_labels":{"os":@})"),
        node(R"(,"plugins":@)"),
        node(R"(,"plugins":[{"type":"network","name":@}])"),
        node(R"(,"address":@)"),
        node(R"(,"slots":@)"),
        R"({@:"n2",)" + down + "}"},
       {R"({"id":@,)" + down + "}", node(R"(,"hostname":@)"), node(R"(,"labels":{@:"v"})"),
        node(R"(,"labels":{"k":@})"), node(R"(,"resources":{"generic":{@:2}})"),
        node(R"(,"resources":{"generic":{"ssd":[@]}})"),
        node(R"(,"plugins":[{"type":"network","name":@}])")}},
      {Target::kBerthd,
       "PATCH",
       "/v1/nodes/n1",
       {R"({"labels":{"zone":"b","rack":"r1"},"slots":2})", R"({"state":"down"})",
        R"({"availability":"drain","labels":{}})"},
       {R"({"state":@})", R"({"availability":@})", R"({"labels":@})", R"({"labels":{@:"v"}})",
        R"({"labels":{"k":@}})", R"({"slots":@})", R"({@:1})"},
       {R"({"labels":{@:"v"}})", R"({"labels":{"k":@}})"}},
      {Target::kBerthd,
       "POST",
       "/v1/nodes/n1/drain",  // takes no body: whatever comes is ignored
       {"{}"},
       {"@", R"({"availability":@})", R"({@:1})"},
       {R"({"id":@})"}},
      {Target::kBerthd,
       "POST",
       "/v1/services",
       {R"({"id":"m1","replicas":2,"task":{"resources":{"cpu":"500m","memory":"256Mi"},)"
        R"("constraints":["node.labels.zone==a"],"preferences":[{"spread":"node.labels.zone"}]}})",
        R"({"id":"m2","mode":"global","task":{"ports":[{"protocol":"tcp","published":8080,)"
        R"("target":80,"mode":"host"}],"networks":["overlay"],"max_replicas_per_node":1}})",
        R"({"id":"m3","replicas":0,"run":{"duration":1.5,"outcome":"fail"}})"},
       {R"({"id":@,"replicas":1})",
        R"({"id":"s2","mode":@})",
        R"({"id":"s2","replicas":@})",
        service(R"(,"task":@)"),
        service(R"(,"task":{"resources":@})"),
        service(R"(,"task":{"resources":{"cpu":@}})"),
        service(R"(,"task":{"resources":{"memory":@}})"),
        service(R"(,"task":{"resources":{"generic":{"gpu":@}}})"),
        service(R"(,"task":{"constraints":@})"),
        service(R"(,"task":{"constraints":[@]})"),
        service(R"(,"task":{"preferences":[{"spread":@}]})"),
        service(R"(,"task":{"platforms":[{"os":@,"arch":"amd64"}]})"),
        service(R"(,"task":{"ports":@})"),
        service(R"(,"task":{"ports":[{"published":@}]})"),
        service(R"(,"task":{"ports":[{"target":80,"protocol":@}]})"),
        service(R"(,"task":{"max_replicas_per_node":@})"),
        service(R"(,"task":{"networks":@})"),
        service(R"(,"task":{"volume_drivers":[@]})"),
        service(R"(,"task":{"log_driver":@})"),
        service(R"(,"run":@)"),
        service(R"(,"run":{"duration":@})"),
        service(R"(,"run":{"outcome":@})"),
        service(R"(,"task":{@:1})"),
        service(R"(,@:1)")},
       {R"({"id":@,"replicas":0})", service(R"(,"task":{"networks":[@]})"),
        service(R"(,"task":{"resources":{"generic":{@:1}}})"),
        service(R"(,"task":{"constraints":["node.labels.zone==a",@]})")}},
      {Target::kBerthd,
       "PATCH",
       "/v1/services/s1",
       {R"({"replicas":3})", R"({"task":{"resources":{"cpu":0.25}}})",
        R"({"replicas":0,"task":{"constraints":["node.role==worker"]}})"},
       {R"({"replicas":@})", R"({"task":@})", R"({"task":{"resources":{"cpu":@}}})",
        R"({"task":{"constraints":[@]}})", R"({"task":{"networks":[@]}})",
        R"({"task":{"log_driver":@}})", R"({"replicas":0,"task":{@:1}})", R"({@:1})"},
       {R"({"task":{"networks":[@]}})", R"({"task":{"volume_drivers":[@]}})",
        R"({"task":{"resources":{"generic":{@:1}}}})"}},
      {Target::kBerthd,
       "POST",
       "/v1/jobs",
       {R"({"id":"k1","requestor":"land-ci","tasks":[{"name":"build","duration":2},{"outcome":"fail"}]})",
        R"({"id":"k2","requestor":"r","task":{"resources":{"cpu":1}},"tasks":[{}]})",
        R"({"id":"k3","requestor":"r","task":{"env":["A=1"]},"commands":[["sh","-c","exit 3"]],)"
        R"("tasks":[{}]})"},
       {R"({"id":@,"requestor":"r","tasks":[{}]})", R"({"id":"j2","requestor":@,"tasks":[{}]})",
        job(R"(,"tasks":@)"), job(R"(,"tasks":[@])"), job(R"(,"tasks":[{"name":@}])"),
        job(R"(,"tasks":[{"duration":@}])"), job(R"(,"tasks":[{"outcome":@}])"),
        job(R"(,"task":@,"tasks":[{}])"), job(R"(,"task":{"constraints":[@]},"tasks":[{}])"),
        job(R"(,"tasks":[{@:1}])"), job(R"(,"tasks":[{}],@:1)"),
        job(R"(,"commands":@,"tasks":[{}])"), job(R"(,"commands":[@],"tasks":[{}])"),
        job(R"(,"commands":[[@]],"tasks":[{}])"),
        job(R"(,"task":{"env":[@]},"commands":[["true"]],"tasks":[{}])")},
       {R"({"id":@,"requestor":"r","tasks":[{}]})", R"({"id":"j2","requestor":@,"tasks":[{}]})",
        job(R"(,"tasks":[{"name":@}])")}},
      {Target::kBerthd,
       "PATCH",
       "/v1/classes",
       {R"({"classes":{"land":40,"diff":25},"requestors":[["^land","land"]],)"
        R"("rebalance":{"threshold":50,"min_duration_s":60}})",
        R"({"rebalance":{"threshold":30,"min_duration_s":10}})"},
       {R"({"classes":@})", R"({"classes":{@:40}})", R"({"classes":{"land":@}})",
        R"({"requestors":@})", R"({"requestors":[@]})",
        R"({"classes":{"land":100},"requestors":[[@,"land"]]})",
        R"({"classes":{"land":100},"requestors":[["^land",@]]})", R"({"rebalance":@})",
        R"({"rebalance":{"threshold":@}})", R"({"rebalance":{"min_duration_s":@}})", R"({@:{}})"},
       {R"({"classes":{@:100}})", R"({"classes":{"land":100},"requestors":[[@,"land"]]})",
        R"({"classes":{"land":100},"requestors":[["^land",@]]})"}},
      {Target::kAgent,
       "POST",
       "/v1/sample",
       {R"({"task":{"id":"t1"},"basis_points":5000})",
        R"({"task":{"id":"t2","priority":3,"task":{"resources":{"cpu":"100m"}}},"budget_ms":10,"node":"a0-n3"})",
        R"({"task":{"id":"t3","edge":{"target":[52520000,13405000],"max_distance_m":100000,)"
        R"("min_battery_percent":10,"min_capacity_mah":0}}})"},
       {R"({"task":@})", R"({"task":{"id":@}})", R"({"task":{"id":"t1","priority":@}})",
        R"({"task":{"id":"t1","task":@}})", R"({"task":{"id":"t1","task":{"constraints":[@]}}})",
        R"({"task":{"id":"t1","task":{"resources":{"memory":@}}}})",
        R"({"task":{"id":"t1","edge":@}})", R"({"task":{"id":"t1","edge":{"target":@}}})",
        R"({"task":{"id":"t1","edge":{"target":[1,@]}}})",
        R"({"task":{"id":"t1","edge":{"max_distance_m":@}}})",
        R"({"task":{"id":"t1","edge":{"min_battery_percent":@}}})",
        R"({"task":{"id":"t1","edge":{"min_capacity_mah":@}}})",
        R"({"task":{"id":"t1"},"basis_points":@})", R"({"task":{"id":"t1"},"budget_ms":@})",
        R"({"task":{"id":"t1"},"node":@})", R"({"task":{"id":"t1",@:1}})",
        R"({"task":{"id":"t1"},@:1})"},
       {R"({"task":{"id":@}})", R"({"task":{"id":"t1"},"node":@})",
        R"({"task":{"id":"t1","task":{"networks":[@]}}})"}},
      {Target::kAgent,
       "POST",
       "/v1/commit",
       {R"({"task":{"id":"c1","task":{"resources":{"cpu":"100m","memory":"64Mi"}}},"node_index":0,"node_id":"a0-n0"})",
        R"({"task":{"id":"c2"},"node_id":"a0-n5"})"},
       {R"({"task":@,"node_id":"a0-n1"})", R"({"task":{"id":@},"node_id":"a0-n1"})",
        R"({"task":{"id":"c3","priority":@},"node_id":"a0-n1"})",
        R"({"task":{"id":"c3","task":@},"node_id":"a0-n1"})",
        R"({"task":{"id":"c3","task":{"resources":{"cpu":@}}},"node_id":"a0-n1"})",
        R"({"task":{"id":"c3","edge":{"target":@}},"node_id":"a0-n1"})",
        R"({"task":{"id":"c3"},"node_index":@,"node_id":"a0-n1"})",
        R"({"task":{"id":"c3"},"node_id":@})", R"({"task":{"id":"c3"},"node_id":"a0-n1",@:1})"},
       {R"({"task":{"id":@},"node_id":"a0-n1"})", R"({"task":{"id":"c3"},"node_id":@})"}},
      {Target::kAgent,
       "POST",
       "/v1/release",
       {R"({"tasks":["c1","c2"]})", R"({"tasks":[]})"},
       {R"({"tasks":@})", R"({"tasks":[@]})", R"({"tasks":["c1",@]})", R"({@:[]})"},
       {R"({"tasks":[@]})", R"({"tasks":["c1",@]})"}},
      {Target::kAgent,
       "POST",
       "/v1/eligible",
       {R"({"task":{"constraints":["node.labels.battery-capacity==4000"]}})", R"({"task":{}})",
        R"({"task":{"platforms":[{"os":"linux","arch":"x86_64"}],"networks":["overlay"]}})"},
       {R"({"task":@})", R"({"task":{"constraints":@}})", R"({"task":{"constraints":[@]}})",
        R"({"task":{"platforms":[{"os":"linux","arch":@}]}})", R"({"task":{"networks":[@]}})",
        R"({"task":{@:1}})", R"({@:{}})"},
       {R"({"task":{"networks":[@]}})", R"({"task":{"volume_drivers":[@]}})"}},
  };
}

// ---------------------------------------------------------------------------
// Helpers of the generators.

size_t Uniform(Rng& rng, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

template <typename T>
const T& Pick(Rng& rng, const std::vector<T>& items) {
  return items[Uniform(rng, items.size())];
}

bool IsKeyHole(const std::string& with_hole) {
  const size_t at = with_hole.find('@');
  return at + 1 < with_hole.size() && with_hole[at + 1] == ':';
}

// `with_hole` with `json` in place of its '@'.
std::string Fill(const std::string& with_hole, const std::string& json) {
  const size_t at = with_hole.find('@');
  return with_hole.substr(0, at) + json + with_hole.substr(at + 1);
}

std::string Quote(const std::string& content) { return '"' + content + '"'; }

std::vector<std::string> ValueHoles(const Route& route) {
  std::vector<std::string> holes;
  for (const std::string& h : route.holes)
    if (!IsKeyHole(h)) holes.push_back(h);
  return holes;
}

std::vector<std::string> KeyHoles(const Route& route) {
  std::vector<std::string> holes;
  for (const std::string& h : route.holes)
    if (IsKeyHole(h)) holes.push_back(h);
  return holes.empty() ? route.holes : holes;
}

// ---------------------------------------------------------------------------
// The generators: one per kind of body. `n` counts the bodies of this kind
// made for this route so far, so a generator can cycle through its cases.

// Objects, arrays or both nested 10 to 200,000 deep, closed or not, bare or
// in a field; always under the body limit.
std::string DeepNesting(Rng& rng, const Route& route, int) {
  static const std::vector<size_t> kDepths = {10, 33, 100, 1'000, 10'000, 100'000, 200'000};
  struct Shape {
    const char* open;
    const char* close;
  };
  static const std::vector<Shape> kShapes = {{"[", "]"}, {R"({"a":)", "}"}, {R"([{"":)", "}]"}};
  const Shape& shape = Pick(rng, kShapes);
  const bool closed = Uniform(rng, 4) != 0;
  const bool bare = Uniform(rng, 3) == 0;
  const std::string with_hole = bare ? "@" : Pick(rng, ValueHoles(route));
  const size_t per_level = std::string(shape.open).size() + std::string(shape.close).size();
  const size_t depth = std::min(Pick(rng, kDepths), (kMaxBody - with_hole.size() - 16) / per_level);
  std::string nested;
  nested.reserve(depth * per_level + 1);
  for (size_t i = 0; i < depth; ++i) nested += shape.open;
  nested += "1";
  if (closed)
    for (size_t i = 0; i < depth; ++i) nested += shape.close;
  return Fill(with_hole, nested);
}

// JSON string content of about `size` bytes in one of four flavours: the
// same for the same size and flavour, so a route accepts each at most once
// and later ones are conflicts (no pile of huge objects slowing berthd).
std::string HugeContent(size_t size, size_t flavour) {
  static const std::vector<std::vector<std::string>> kPieces = {
      {"a"},
      {"a", "b", "-", "0", "_", "Z", "."},
      {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "a"},  // é € 😀 a
      {R"(\")", R"(\\)", R"(\n)", R"(\u00e9)", R"(\ud83d\ude00)", R"(\u0000)", "x"}};
  const std::vector<std::string>& pieces = kPieces[flavour % kPieces.size()];
  std::string s;
  s.reserve(size + 16);
  for (size_t i = 0; s.size() < size; ++i) s += pieces[i % pieces.size()];
  return s;
}

// Ids, names, label keys and values, hostnames... of 64 to ~900,000 bytes.
std::string HugeString(Rng& rng, const Route& route, int) {
  static const std::vector<size_t> kSizes = {64, 64, 100, 100, 4'097, 4'097, 70'000, 900'000};
  const size_t size = Pick(rng, kSizes);
  const size_t flavour = Uniform(rng, 4);
  return Fill(Pick(rng, route.holes), Quote(HugeContent(size, flavour)));
}

// Raw bytes that are not UTF-8, and escapes that decode to no character.
const std::vector<std::string> kBadUtf8 = {"\x80",
                                           "\xBF",
                                           "\xFE",
                                           "\xFF",
                                           "\xC0\xAF",
                                           "\xC1\xBF",
                                           "\xE0\x80\xAF",
                                           "\xF0\x80\x80\xAF",  // overlong
                                           "\xED\xA0\x80",
                                           "\xED\xBF\xBF",  // surrogates
                                           "\xF4\x90\x80\x80",
                                           "\xF5\x80\x80\x80",
                                           "\xF8\x88\x80\x80\x80",  // > U+10FFFF
                                           "\xC3",
                                           "\xE2\x82",
                                           "\xF0\x9F\x98",  // truncated
                                           "\xC3\x28",
                                           "\xE2\x28\xA1",
                                           R"(\ud800)",
                                           R"(\udfff)",
                                           R"(\ud800\u0041)",
                                           R"(\udc00\ud800)"};

// Invalid UTF-8 inside a string value, inside a key, outside any string, or
// a random run of bytes 0x80..0xFF (starting with a stray continuation byte)
// inside a string.
std::string InvalidUtf8(Rng& rng, const Route& route, int n) {
  std::string bad = Pick(rng, kBadUtf8);
  switch (n % 4) {
    case 0:
      return Fill(Pick(rng, ValueHoles(route)), Quote("x" + bad + "y"));
    case 1:
      return Fill(Pick(rng, KeyHoles(route)), Quote(bad + "k"));
    case 2: {
      std::string body = Pick(rng, route.valid);
      return body.insert(Uniform(rng, body.size() + 1), bad);
    }
    default: {
      bad = static_cast<char>(0x80 + Uniform(rng, 0x40));  // a stray continuation byte first
      for (size_t i = Uniform(rng, 16); i > 0; --i)
        bad += static_cast<char>(0x80 + Uniform(rng, 0x80));
      return Fill(Pick(rng, route.holes), Quote("a" + bad));
    }
  }
}

// Values of every JSON type, and numbers no field takes.
const std::vector<std::string> kWrongValues = {"null",
                                               "true",
                                               "false",
                                               "0",
                                               "-1",
                                               "-0",
                                               "1.5",
                                               "1E999999",
                                               "-1E999999",
                                               "1e308",
                                               "1e-400",
                                               "4294967296",
                                               "9223372036854775808",
                                               "-9223372036854775809",
                                               "18446744073709551616",
                                               R"("")",
                                               R"("x")",
                                               R"("-1")",
                                               R"("1E999999")",
                                               R"("18446744073709551616")",
                                               R"("NaN")",
                                               "[]",
                                               "[null]",
                                               R"([1,"a"])",
                                               "[[]]",
                                               "{}",
                                               R"({"a":1})",
                                               R"({"":null})"};
const std::vector<std::string> kUnknownKeys = {R"("colour")", R"("")",       R"("ID")",
                                               R"("id ")",    R"("\u0000")", R"("__proto__")",
                                               R"("a.b")",    R"("\u00e9")"};

// Each field in turn (a value of the wrong type, or an unknown key).
std::string WrongType(Rng& rng, const Route& route, int n) {
  const std::string& with_hole = route.holes[static_cast<size_t>(n) % route.holes.size()];
  return Fill(with_hole, Pick(rng, IsKeyHole(with_hole) ? kUnknownKeys : kWrongValues));
}

// Bodies that are not a JSON object, or not JSON.
const std::vector<std::string> kOddBodies = {"",
                                             " ",
                                             "\r\n",
                                             "null",
                                             "true",
                                             "0",
                                             "-1",
                                             "1.5",
                                             "1E999999",
                                             "18446744073709551616",
                                             R"("x")",
                                             "[]",
                                             "[{}]",
                                             "[null,1]",
                                             "{",
                                             "}",
                                             "{}",
                                             "{}{}",
                                             "{} x",
                                             R"({"a":1,})",
                                             "{,}",
                                             R"({"a"})",
                                             "{'a':1}",
                                             "{a:1}",
                                             R"({"a":NaN})",
                                             R"({"a":Infinity})",
                                             R"({"a":-})",
                                             R"({"a":01})",
                                             R"({"a":1.})",
                                             R"({"a":.5})",
                                             R"({"a":0x10})",
                                             R"({"a":"\u12"})",
                                             R"({"a":"\x"})",
                                             "{\"a\":\"\t\"}",  // a raw tab in a string
                                             R"({"a":1,"a":2})",
                                             R"({"":{}})",
                                             "/* c */{}",
                                             "{}// c",
                                             "\xEF\xBB\xBF{}",  // a byte-order mark
                                             std::string("{\0}", 3),
                                             std::string(1, '\0'),
                                             "not json",
                                             "<a/>",
                                             "id=n1&replicas=1"};

// One of kOddBodies in turn, or a valid body cut short or followed by junk.
std::string OddBody(Rng& rng, const Route& route, int n) {
  const size_t which = static_cast<size_t>(n) % (kOddBodies.size() + 2);
  if (which < kOddBodies.size()) return kOddBodies[which];
  const std::string& valid = Pick(rng, route.valid);
  if (which == kOddBodies.size()) return valid.substr(0, Uniform(rng, valid.size()));
  return valid + Pick(rng, std::vector<std::string>{"}", "]", ",", "x", " {}", "\n\n1"});
}

// JSON string contents (escaped as they appear between the quotes).
const std::vector<std::string> kBadIds = {"",
                                          std::string(63, 'a'),  // valid
                                          std::string(64, 'a'),
                                          std::string(255, 'b'),
                                          std::string(256, 'b'),
                                          "a/b",
                                          "../../etc/passwd",
                                          "a b",
                                          " a",
                                          "a ",
                                          R"(a\u0000b)",
                                          R"(a\nb)",
                                          "a\nb",  // a raw newline: not JSON
                                          R"(a\tb)",
                                          R"(\u001f)",
                                          "\x7F",
                                          "-a",
                                          "a-",
                                          "_a",
                                          "a.b",
                                          ".",
                                          "..",
                                          "\xC3\xA9",  // é
                                          R"(\u00e9)",
                                          "\xF0\x9F\x98\x80",
                                          "a%2Fb",
                                          "a?b#c",
                                          R"(a\\b)",
                                          R"(a\"b)",
                                          "Ab-9_z"};  // valid

// Each of kBadIds in turn, where an id or name goes.
std::string BadId(Rng& rng, const Route& route, int n) {
  return Fill(Pick(rng, route.id_holes), Quote(kBadIds[static_cast<size_t>(n) % kBadIds.size()]));
}

// A replica count a mutation made large ("replicas":2 -> "replicas":922):
// not hostile, only slow for berthd's control loop, so drawn again.
bool ManyReplicas(const std::string& body) {
  const Json json = Json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("replicas")) return false;
  const Json& replicas = json["replicas"];
  return replicas.is_number() && replicas.get<double>() > 20 && replicas.get<double>() <= 1e6;
}

// A valid body with one to three bytes flipped, inserted or deleted.
std::string Mutation(Rng& rng, const Route& route, int) {
  static const std::string kJsonish = R"({}[]":,\.-+eE0123456789 )";
  const std::string& valid = Pick(rng, route.valid);
  std::string body;
  do {
    body = valid;
    for (size_t edits = 1 + Uniform(rng, 3); edits > 0; --edits) {
      const size_t at = Uniform(rng, body.size() + 1);
      const size_t what = Uniform(rng, 3);
      if (what == 0 && at < body.size()) {
        body[at] = static_cast<char>(body[at] ^ (1 << Uniform(rng, 8)));
      } else if (what == 1) {
        const char byte = Uniform(rng, 2) == 0 ? kJsonish[Uniform(rng, kJsonish.size())]
                                               : static_cast<char>(Uniform(rng, 256));
        body.insert(at, 1, byte);
      } else if (at < body.size()) {
        body.erase(at, 1);
      }
    }
  } while (ManyReplicas(body));
  return body;
}

struct Generator {
  const char* kind;
  std::string (*make)(Rng&, const Route&, int);
};

const std::vector<Generator> kGenerators = {
    {"deep-nesting", DeepNesting}, {"huge-string", HugeString}, {"invalid-utf8", InvalidUtf8},
    {"wrong-type", WrongType},     {"odd-body", OddBody},       {"bad-id", BadId},
    {"mutation", Mutation}};

// ---------------------------------------------------------------------------
// Sending and checking.

// The first `max` bytes, with non-printable ones and '\' as \xNN.
std::string Printable(const std::string& body, size_t max = 80) {
  std::string out;
  for (size_t i = 0; i < body.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(body[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned>(c));
      out += hex;
    }
  }
  if (body.size() > max) out += "...";
  return out;
}

// One server and what a refused request must leave as it was.
class Server {
 public:
  // Over HTTPS, trusting the CA of the server's data directory `dir`.
  Server(const std::string& port, const std::string& dir, std::string baseline_path,
         std::string state_path, std::vector<std::string> state_fields)
      : client_("https://127.0.0.1:" + port),
        baseline_path_(std::move(baseline_path)),
        state_path_(std::move(state_path)),
        state_fields_(std::move(state_fields)) {
    client_.set_ca_cert_store(tls::NewTrustStore(api::TrustIn(dir).trust_pem));
    client_.enable_server_certificate_verification(true);
    client_.set_bearer_token_auth(FirstLine(dir + "/token"));
    client_.set_connection_timeout(5);
    client_.set_read_timeout(60);  // above ?wait=settled&timeout=30
    client_.set_write_timeout(60);
  }
  httplib::Client& client() { return client_; }

  // The state fields as text ("revision=12 "), read from the baseline path
  // (before a request) or the state path (after it), or why they could not
  // be read.
  struct State {
    bool ok = false;
    std::string text;
  };
  State Read(bool baseline) {
    httplib::Result r = client_.Get(baseline ? baseline_path_ : state_path_);
    if (!r) return {false, "no answer: " + httplib::to_string(r.error())};
    if (r->status != 200) return {false, "status " + std::to_string(r->status) + ": " + r->body};
    const Json json = Json::parse(r->body, nullptr, false);
    if (json.is_discarded() || !json.is_object()) return {false, "not a JSON object: " + r->body};
    State state{true, ""};
    for (const std::string& field : state_fields_) {
      if (!json.contains(field)) return {false, "no '" + field + "' in " + r->body};
      state.text += field + "=" + json[field].dump() + " ";
    }
    return state;
  }

 private:
  httplib::Client client_;
  std::string baseline_path_, state_path_;
  std::vector<std::string> state_fields_;
};

// Whether `body` is {"error": {"code": string, "message": string}}.
bool IsErrorBody(const std::string& body) {
  const Json json = Json::parse(body, nullptr, false);
  return !json.is_discarded() && json.is_object() && json.contains("error") &&
         json["error"].is_object() && json["error"].contains("code") &&
         json["error"]["code"].is_string() && json["error"].contains("message") &&
         json["error"]["message"].is_string();
}

// What the body limit means for one body.
enum class Limit { kAny, kTooLarge, kNotTooLarge };

class Prober {
 public:
  Prober(Server& berthd, Server& agent) : berthd_(berthd), agent_(agent) {}
  bool done() const { return failures_ >= kMaxFailures; }
  int failures() const { return failures_; }

  // Sends `body` and checks the answer; see the top of the file.
  void Send(const Route& route, const char* kind, const std::string& body, Limit limit) {
    ++sent_;
    const std::string what = "body #" + std::to_string(sent_) + " (seed " + std::to_string(kSeed) +
                             "): " + route.Name() + ", " + kind + ", " +
                             std::to_string(body.size()) + " bytes: " + Printable(body);
    Server& server = route.target == Target::kBerthd ? berthd_ : agent_;
    const Server::State before = server.Read(/*baseline=*/true);
    if (!Check(before.ok, what,
               "cannot read the state before the request (" + before.text +
                   "); the last body it accepted: " + last_accepted_[route.target])) {
      failures_ = kMaxFailures;  // the server is gone or stuck: later requests tell nothing more
      return;
    }
    httplib::Client& client = server.client();
    httplib::Result r = route.method == "PATCH" ? client.Patch(route.path, body, "application/json")
                                                : client.Post(route.path, body, "application/json");
    if (!Check(static_cast<bool>(r), what,
               "no answer (" + httplib::to_string(r.error()) + "): did the server crash?")) {
      failures_ = kMaxFailures;
      return;
    }
    const int status = r->status;
    const std::string answer = "status " + std::to_string(status) + ", " + Printable(r->body, 200);
    Check(status < 500, what, "a server error: " + answer);
    if (limit == Limit::kTooLarge) Check(status == 413, what, "expected 413, got " + answer);
    if (limit == Limit::kNotTooLarge) Check(status != 413, what, "at the limit, got " + answer);
    if (status < 400) {
      last_accepted_[route.target] = what;
      Check(!Json::parse(r->body, nullptr, false).is_discarded(), what,
            "an accepted request's answer is not JSON: " + answer);
      return;
    }
    Check(IsErrorBody(r->body), what, "not {\"error\": {\"code\", \"message\"}}: " + answer);
    const Server::State after = server.Read(/*baseline=*/false);
    Check(after.ok && after.text == before.text, what,
          "a refused request changed something: before " + before.text + ", after " + after.text +
              "; " + answer);
  }

 private:
  bool Check(bool ok, const std::string& what, const std::string& why) {
    EXPECT_TRUE(ok) << why << "\n  " << what;
    if (!ok) ++failures_;
    return ok;
  }

  Server& berthd_;
  Server& agent_;
  int failures_ = 0;
  int sent_ = 0;
  std::map<Target, std::string> last_accepted_ = {{Target::kBerthd, "none"},
                                                  {Target::kAgent, "none"}};
};

// `body` padded with spaces (still the same JSON) to `size` bytes.
std::string Padded(const std::string& body, size_t size) {
  return body + std::string(size - body.size(), ' ');
}

TEST(HostileInput, EveryBodyIsAnsweredAndEveryRefusalChangesNothing) {
  store::TestDir dir;
  // A 1 ms batch window: ?wait=settled before each request waits for one
  // pass after it, which the default 50 ms window would make 3,000 times.
  Process berthd({BERTHD_BINARY, "--data-dir", dir.path() + "/berthd", "--port", "0",
                  "--batch-quiet-ms", "1", "--batch-max-ms", "1"});
  Process agent({BERTH_AGENT_BINARY, "--id", "a0", "--simulate", "20", "--data-dir",
                 dir.path() + "/agent", "--port", "0"});
  const std::string berthd_port =
      PortInLine(berthd.WaitForLine("listening on", std::chrono::seconds(30)));
  const std::string agent_port =
      PortInLine(agent.WaitForLine("listening on", std::chrono::seconds(30)));
  ASSERT_FALSE(berthd_port.empty());
  ASSERT_FALSE(agent_port.empty());
  Server berthd_server(berthd_port, dir.path() + "/berthd", "/v1/health?wait=settled&timeout=30",
                       "/v1/health", {"revision"});
  Server agent_server(agent_port, dir.path() + "/agent", "/v1/agent", "/v1/agent",
                      {"bound", "bindings"});

  // Targets for the PATCH and drain routes (n1 down and drained: see Routes).
  httplib::Client& client = berthd_server.client();
  httplib::Result n1 = client.Post(
      "/v1/nodes",
      R"({"id":"n1","state":"down","availability":"drain","resources":{"cpu":4,"memory":"8Gi"}})",
      "application/json");
  ASSERT_TRUE(n1);
  ASSERT_EQ(n1->status, 201) << n1->body;
  httplib::Result s1 =
      client.Post("/v1/services", R"({"id":"s1","replicas":0})", "application/json");
  ASSERT_TRUE(s1);
  ASSERT_EQ(s1->status, 201) << s1->body;

  const std::vector<Route> routes = Routes();
  Prober prober(berthd_server, agent_server);
  Rng rng(kSeed);
  for (int n = 0; n < kRounds && !prober.done(); ++n)
    for (const Generator& generator : kGenerators)
      for (const Route& route : routes) {
        if (prober.done()) break;
        prober.Send(route, generator.kind, generator.make(rng, route, n), Limit::kAny);
      }
  // At the body limit, and just over it.
  for (const Route& route : routes) {
    if (prober.done()) break;
    const std::string& valid = route.valid.front();
    prober.Send(route, "at-limit", Padded(valid, kMaxBody), Limit::kNotTooLarge);
    prober.Send(route, "over-limit", Padded(valid, kMaxBody + 1), Limit::kTooLarge);
    const std::string with_hole = ValueHoles(route).front();
    const std::string huge(kMaxBody + 4096 - with_hole.size(), 'a');
    prober.Send(route, "over-limit", Fill(with_hole, Quote(huge)), Limit::kTooLarge);
  }

  // Both still serve.
  httplib::Result health = client.Get("/v1/health");
  ASSERT_TRUE(health) << "berthd is gone: " << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200) << health->body;
  httplib::Result agent_info = agent_server.client().Get("/v1/agent");
  ASSERT_TRUE(agent_info) << "berth-agent is gone: " << httplib::to_string(agent_info.error());
  EXPECT_EQ(agent_info->status, 200) << agent_info->body;
  ASSERT_EQ(prober.failures(), 0) << "seed " << kSeed
                                  << (prober.done() ? " (stopped after the first failures)" : "");
}

}  // namespace
}  // namespace berth
