#include "config/config_schema.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <map>
#include <set>
#include <string>

#include "config/fleet_config.h"

namespace switchyard::config {
namespace {

namespace json = boost::json;

// Every closed mapping of the schema (additionalProperties: false), by the
// JSON pointer of its `properties`.
void closed_mappings(const json::value& v, const std::string& at,
                     std::map<std::string, std::set<std::string>>& out) {
  if (const auto* o = v.if_object()) {
    if (const auto* p = o->if_contains("properties");
        p && o->contains("additionalProperties") && o->at("additionalProperties") == false) {
      auto& fields = out[at];
      for (const auto& kv : p->as_object()) fields.insert(std::string(kv.key()));
    }
    for (const auto& kv : *o) closed_mappings(kv.value(), at + "/" + std::string(kv.key()), out);
  } else if (const auto* a = v.if_array()) {
    for (std::size_t i = 0; i < a->size(); ++i)
      closed_mappings((*a)[i], at + "/" + std::to_string(i), out);
  }
}

// The loader's own field list at one place: what its error for an unknown
// field there says it expected.
std::set<std::string> loader_fields(const std::string& yaml) {
  auto parsed = parse_fleet_config(yaml, "fleet.yaml");
  EXPECT_FALSE(parsed) << yaml;
  if (parsed) return {};
  const std::string& m = parsed.error().message;
  const std::string marker = "unknown field (expected one of: ";
  const auto from = m.find(marker);
  EXPECT_NE(from, std::string::npos) << m;
  if (from == std::string::npos) return {};
  std::set<std::string> fields;
  std::string list = m.substr(from + marker.size());
  list = list.substr(0, list.find(')'));
  for (std::size_t start = 0; start <= list.size();) {
    const auto comma = std::min(list.find(", ", start), list.size());
    fields.insert(list.substr(start, comma - start));
    start = comma + 2;
  }
  return fields;
}

constexpr std::string_view kInstance = "instances:\n  - {model: m, url: 'http://127.0.0.1:1'}\n";

TEST(ConfigSchema, NamesExactlyTheFieldsTheLoaderAcceptsAtEveryLevel) {
  // A config with an unknown field `zz` at each closed mapping of the schema.
  const std::string i(kInstance);
  const std::map<std::string, std::string> probes = {
      {"", i + "zz: 1\n"},
      {"/properties/models/items", i + "models: [{name: m, zz: 1}]\n"},
      {"/properties/instances/items", "instances:\n  - {model: m, url: 'http://x:1', zz: 1}\n"},
      {"/properties/api_keys/items/anyOf/1", i + "api_keys: [{key: k, zz: 1}]\n"},
      {"/properties/routing/anyOf/1", i + "routing: {zz: 1}\n"},
      {"/properties/timeouts", i + "timeouts: {zz: 1}\n"},
      {"/properties/health", i + "health: {zz: 1}\n"},
      {"/properties/queue", i + "queue: {zz: 1}\n"},
      {"/properties/switching", i + "switching: {zz: 1}\n"},
      {"/properties/switching/properties/estimates/additionalProperties",
       i + "switching: {estimates: {x: {zz: 1}}}\n"},
      {"/properties/tracing", i + "tracing: {endpoint: 'http://127.0.0.1:4318', zz: 1}\n"},
      {"/properties/log", i + "log: {zz: 1}\n"},
      {"/properties/gpus/items", i + "gpus: [{id: 0, memory: 24GiB, zz: 1}]\n"},
      {"/properties/swapping", i + "swapping: {zz: 1}\n"},
  };
  std::map<std::string, std::set<std::string>> schema;
  closed_mappings(fleet_config_schema(), "", schema);
  for (const auto& [at, fields] : schema) {
    const auto probe = probes.find(at);
    if (probe == probes.end()) {
      ADD_FAILURE() << "the schema has a mapping at '" << at
                    << "' this test does not compare with the loader: add a probe";
      continue;
    }
    EXPECT_EQ(fields, loader_fields(probe->second)) << "at '" << at << "'";
  }
  EXPECT_EQ(schema.size(), probes.size()) << "a probe names a mapping the schema lacks";
}

TEST(ConfigSchema, IsADraft2020Schema) {
  const auto schema = fleet_config_schema();
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema.at("required").at(0), "instances");
}

TEST(TracingConfig, ReadsItsFieldsAndRefusesBadOnes) {
  const std::string i(kInstance);
  auto c = parse_fleet_config(
      i + "tracing: {endpoint: 'http://127.0.0.1:4318', sample: 0.25, service_name: gw}\n"
          "log: {format: json}\n",
      "f.yaml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_TRUE(c->tracing);
  EXPECT_EQ(c->tracing->endpoint, "http://127.0.0.1:4318");
  EXPECT_EQ(c->tracing->sample, 0.25);
  EXPECT_EQ(c->tracing->service_name, "gw");
  EXPECT_EQ(c->log.format, LogOptions::Format::json);
  EXPECT_FALSE(parse_fleet_config(i, "f.yaml")->tracing);

  const std::pair<std::string, std::string> bad[] = {
      {"tracing: {sample: 1}\n", "f.yaml:3: tracing.endpoint: required"},
      {"tracing: {endpoint: 'https://x:4318'}\n", "f.yaml:3: tracing.endpoint:"},
      {"tracing: {endpoint: 'http://x:4318', sample: 1.5}\n", "tracing.sample: expected a number"},
      {"log: {format: xml}\n", "f.yaml:3: log.format: 'xml' is not one of: text, json"},
  };
  for (const auto& [yaml, message] : bad) {
    auto r = parse_fleet_config(i + yaml, "f.yaml");
    ASSERT_FALSE(r) << yaml;
    EXPECT_NE(r.error().message.find(message), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace switchyard::config
