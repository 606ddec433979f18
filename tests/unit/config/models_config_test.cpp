#include <gtest/gtest.h>

#include "config/fleet_config.h"

namespace switchyard::config {
namespace {

using namespace std::chrono_literals;

Result<FleetConfig> parse_models(const std::string& text) {
  return parse_fleet_config(text, "fleet.yaml");
}

// The message names the file, the line and the field.
void expect_error(const std::string& text, const std::string& where, const std::string& part) {
  auto c = parse_models(text);
  ASSERT_FALSE(c) << "accepted:\n" << text;
  EXPECT_NE(c.error().message.find("fleet.yaml:" + where), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find(part), std::string::npos) << c.error().message;
}

TEST(ModelsConfig, ParsesGpusLoadTtlMemoryAndSwapping) {
  auto c = parse_models(R"(
gpus:
  - {id: 0, memory: 24GiB}
  - {id: 1, memory: 24GiB}
instances:
  - {name: orch, model: a, gpus: [0], command: run-a}
  - name: coder
    model: c
    gpus: [1]
    load: on-demand
    ttl: 10m
    memory: 20GiB
    prestart: true
    command: run-c
swapping:
  policy: fifo
  max_wait: 90s
  min_resident: 10s
)");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->gpus.size(), 2u);
  EXPECT_EQ(c->gpus[1].id, "1");
  EXPECT_EQ(c->gpus[1].memory, 24ull << 30);
  EXPECT_EQ(c->instances[0].load, LoadMode::always);
  EXPECT_EQ(c->instances[1].load, LoadMode::on_demand);
  EXPECT_EQ(c->instances[1].ttl, std::chrono::milliseconds(10min));
  EXPECT_TRUE(c->instances[1].prestart);  // loaded at start: no sleep or profile needed
  EXPECT_EQ(c->instances[1].memory, 20ull << 30);
  EXPECT_EQ(c->instances[1].gpu_ids(), std::vector<std::string>{"1"});
  EXPECT_EQ(c->swapping.policy, SwappingOptions::Policy::fifo);
  EXPECT_EQ(c->swapping.max_wait, std::chrono::milliseconds(90s));
  EXPECT_EQ(c->swapping.min_resident, std::chrono::milliseconds(10s));
  // Where each figure comes from: the declared memory, else plan's estimate.
  c->memory_estimates["orch"] = {8ull << 30, "plan: weights + KV"};
  EXPECT_EQ(instance_memory(*c, 1)->source, "instances[1].memory");
  EXPECT_EQ(instance_memory(*c, 0)->source, "plan: weights + KV");
  c->memory_estimates.clear();
  EXPECT_FALSE(instance_memory(*c, 0));
}

TEST(ModelsConfig, DefaultsAreBatchTwoMinutesAndThirtySeconds) {
  auto c = parse_models("instances:\n  - {name: a, model: a, command: run}\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->swapping.policy, SwappingOptions::Policy::batch);
  EXPECT_EQ(c->swapping.max_wait, std::chrono::milliseconds(2min));
  EXPECT_EQ(c->swapping.min_resident, std::chrono::milliseconds(30s));
  EXPECT_TRUE(c->gpus.empty());
}

TEST(ModelsConfig, EachBadInputIsAnErrorNamingLineAndField) {
  const std::string gpus = "gpus:\n  - {id: 0, memory: 24GiB}\n";
  expect_error(gpus + "instances:\n  - {name: a, model: a, gpus: [3], command: run}\n",
               "4:", "instances[0].gpus: '3' is not one of the gpus (0)");
  expect_error(
      "gpus:\n  - {id: 0, memory: lots}\ninstances:\n  - {name: a, model: a, command: run}\n",
      "2:", "gpus[0].memory: 'lots' is not a size");
  expect_error("instances:\n  - {name: a, model: a, command: run, memory: 2 bushels}\n",
               "2:", "instances[0].memory: '2 bushels' is not a size");
  expect_error("instances:\n  - {name: a, model: a, command: run, ttl: 5m}\n",
               "2:", "instances[0].ttl: only for 'load: on-demand'");
  expect_error("instances:\n  - {name: a, model: a, url: 'http://127.0.0.1:9', load: on-demand}\n",
               "2:", "instances[0].load: on-demand needs a 'command'");
  expect_error("instances:\n  - {name: a, model: a, command: run, load: sometimes}\n",
               "2:", "instances[0].load: 'sometimes' is not one of: always, on-demand");
  expect_error(gpus +
                   "instances:\n  - {name: a, model: a, gpus: [0], memory: 30GiB, "
                   "load: on-demand, command: run}\n",
               "4:", "instances[0].memory: 30.0 GiB per GPU does not fit GPU 0 (24.0 GiB)");
  expect_error("instances:\n  - {name: a, model: a, command: run}\nswapping:\n  policy: lifo\n",
               "4:", "swapping.policy: 'lifo' is not one of: batch, fifo");
  expect_error("instances:\n  - {name: a, model: a, command: run}\nswapping:\n  max_wait: 0s\n",
               "4:", "swapping.max_wait: must be above 0");
  expect_error("instances:\n  - {name: a, model: a, command: run}\nswapping: {greed: 1}\n",
               "3:", "swapping.greed: unknown field");
  expect_error(
      "gpus:\n  - {id: 0, memory: 1GiB}\n  - {id: 0, memory: 1GiB}\ninstances:\n"
      "  - {name: a, model: a, command: run}\n",
      "3:", "gpus[1].id: '0' is listed twice");
  expect_error(
      "instances:\n  - {name: a, model: a, gpus: [0], command: run, load: on-demand}\n"
      "  - {name: b, model: a, gpus: [1], command: run}\nprofiles:\n  p: [a]\n",
      "2:", "instances[0].load: 'a' is in a profile");
}

TEST(ModelsConfig, GpusAndSwappingAReloadApplies) {
  auto a = parse_models("instances:\n  - {name: a, model: a, command: run}\n");
  auto b = parse_models(
      "gpus: [{id: 0, memory: 8GiB}]\ninstances:\n  - {name: a, model: a, command: run}\n"
      "swapping: {policy: fifo}\n");
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(restart_only_changes(*a, *b).empty());
}

}  // namespace
}  // namespace switchyard::config
