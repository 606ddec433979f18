#include "profiles/model_residency.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <algorithm>
#include <cstdint>
#include "../support.h"

namespace switchyard::profiles {
namespace {

using namespace switchyard::testing_support;

namespace net = boost::asio;
using namespace std::chrono_literals;
using fleet::AdminCause;

// Instances whose engines start and stop at once (or fail to), with the
// gateway's in-flight counts set by the test.
class FakeResidencyEnv final : public ResidencyEnv {
 public:
  std::vector<std::unique_ptr<fleet::Instance>> table;
  std::map<std::size_t, int> busy;
  std::map<std::string, std::string> fail_start;  // name → why
  std::vector<std::string> log;
  net::steady_timer* stop_gate = nullptr;  // when set, engines stop once it is cancelled

  const std::vector<std::unique_ptr<fleet::Instance>>& instances() const override { return table; }
  int in_flight(std::size_t i) const override {
    auto it = busy.find(i);
    return it == busy.end() ? 0 : it->second;
  }
  void set_cause(std::size_t i, AdminCause c, bool on) override { table[i]->causes.set(c, on); }
  net::awaitable<std::optional<std::string>> bring_up(std::size_t i) override {
    log.push_back("up " + table[i]->name());
    if (auto it = fail_start.find(table[i]->name()); it != fail_start.end()) co_return it->second;
    table[i]->state = fleet::InstanceState::ready;
    co_return std::nullopt;
  }
  net::awaitable<void> bring_down(std::size_t i) override {
    log.push_back("down " + table[i]->name());
    if (stop_gate) co_await stop_gate->async_wait(net::as_tuple(net::use_awaitable));
    table[i]->state = fleet::InstanceState::stopped;
  }
};

struct Box {
  net::io_context io;
  FakeResidencyEnv env;
  config::FleetConfig config;
  steady_time now{std::chrono::hours(1)};
  std::vector<std::string> events;
  std::unique_ptr<ModelResidency> residency;
  int requests = 0;  // each waiting() needs its own address

  // One 24 kGiB card; models A, B, C of 12, 12 and 20 kGiB, on demand.
  explicit Box(config::SwappingOptions::Policy policy = config::SwappingOptions::Policy::batch) {
    config.gpus = {{"0", 24 * kGiB}};
    config.swapping.policy = policy;
    config.swapping.max_wait = 120s;
    config.swapping.min_resident = 30s;
    config.switching.switch_cost = 20s;
    add("a", "A", 12);
    add("b", "B", 12);
    add("c", "C", 20);
  }
  void add(std::string name, std::string model, std::uint64_t gib) {
    config::InstanceConfig c;
    c.name = std::move(name);
    c.model = model;
    c.gpus = "0";
    c.memory = gib * kGiB;
    c.command = "engine";
    c.load = config::LoadMode::on_demand;
    config.instances.push_back(c);
    config.models.push_back({model, {}});
    auto inst = std::make_unique<fleet::Instance>();
    inst->index = env.table.size();
    inst->config = c;
    inst->state = fleet::InstanceState::stopped;
    inst->causes.set(AdminCause::model_unloaded, true);  // as the fleet starts it
    env.table.push_back(std::move(inst));
  }
  ModelResidency& r() {
    if (!residency) {
      residency =
          std::make_unique<ModelResidency>(io.get_executor(), config, env, [this] { return now; });
      residency->on_event([this](const ResidencyEvent& e) {
        events.push_back(std::string(to_string(e.kind)) + " " + e.model + " " + e.reason);
      });
    }
    return *residency;
  }
  std::string status(const std::string& model) {
    for (const auto& s : r().models())
      if (s.model == model) return s.value;
    return "?";
  }
  // A request for `model` that waits until the caller says it left.
  const void* request(const std::string& model) {
    const void* id = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(++requests));
    r().waiting(id, model);
    return id;
  }
  void run() {
    io.restart();
    io.poll();
  }
  // A loaded model with one request running on it.
  void load_busy(const std::string& model, std::size_t index) {
    const void* id = request(model);
    run();
    ASSERT_EQ(status(model), "loaded");
    r().left(id);
    env.busy[index] = 1;
  }
};

TEST(ModelResidency, NothingLoadsUntilARequestNeedsItsModel) {
  Box box;
  box.r();
  box.run();
  EXPECT_EQ(box.status("A"), "unloaded");
  EXPECT_TRUE(box.env.log.empty());
  box.request("A");
  EXPECT_EQ(box.status("A"), "loading");
  box.run();
  EXPECT_EQ(box.status("A"), "loaded");
  EXPECT_TRUE(box.r().routable("A"));
  EXPECT_EQ(box.events, (std::vector<std::string>{"loading A request", "loaded A request"}));
  EXPECT_EQ(box.r().memory_in_use().at("0"), 12 * kGiB);
}

TEST(ModelResidency, PrestartLoadsMarkedInstancesThatFitInOrderAndNoOther) {
  Box box;
  for (std::size_t i : {1, 2}) box.env.table[i]->config.prestart = true;  // b and c
  box.r().prestart();
  box.run();
  // B (12 of 24) loads; C (20) would need B gone, and a prestart unloads nothing.
  EXPECT_EQ(box.status("A"), "unloaded");
  EXPECT_EQ(box.status("B"), "loaded");
  EXPECT_EQ(box.status("C"), "unloaded");
  EXPECT_EQ(box.events, (std::vector<std::string>{"loading B prestart", "loaded B prestart"}));
  // Afterwards it is an on-demand model like any other: a request evicts it.
  box.request("C");
  box.run();
  EXPECT_EQ(box.status("B"), "unloaded");
  EXPECT_EQ(box.status("C"), "loaded");
}

TEST(ModelResidency, AnEngineThatSleepsByItselfShowsSleepingAndItsWakeAsALoad) {
  using Sleep = fleet::Instance::EngineSleep;
  Box box;
  box.request("A");
  box.run();
  auto& a = *box.env.table[0];
  a.engine_sleep = Sleep::asleep;  // llama-server --sleep-idle-seconds said so
  EXPECT_EQ(box.status("A"), "sleeping");
  EXPECT_TRUE(box.r().routable("A")) << "its next request wakes it";
  a.engine_sleep = Sleep::waking;
  EXPECT_EQ(box.status("A"), "loading");
  a.engine_sleep = Sleep::awake;
  EXPECT_EQ(box.status("A"), "loaded");
  // An always-on instance too; another awake copy keeps the model loaded.
  box.env.table[1]->config.load = config::LoadMode::always;
  box.env.table[1]->causes = {};
  box.env.table[1]->state = fleet::InstanceState::ready;
  box.env.table[1]->engine_sleep = Sleep::asleep;
  EXPECT_EQ(box.status("B"), "sleeping");
  box.env.table[1]->config.model = "A";
  EXPECT_EQ(box.status("A"), "loaded");
  a.engine_sleep = Sleep::asleep;
  EXPECT_EQ(box.status("A"), "sleeping");
}

TEST(ModelResidency, SeveralModelsStayLoadedWhereMemoryAllows) {
  Box box;
  box.request("A");
  box.request("B");
  box.run();
  EXPECT_EQ(box.status("A"), "loaded");
  EXPECT_EQ(box.status("B"), "loaded");
  EXPECT_EQ(box.r().memory_in_use().at("0"), 24 * kGiB);
}

TEST(ModelResidency, AReloadAppliesItsCardsAndNewModels) {
  Box box;
  box.r().left(box.request("A"));
  box.run();
  // 48 kGiB now, and a model D the reload added (the fleet parks it unloaded).
  box.config.gpus = {{"0", 48 * kGiB}};
  box.add("d", "D", 12);
  box.r().reload(box.config);
  EXPECT_TRUE(box.r().manages("D"));
  EXPECT_EQ(box.status("D"), "unloaded");
  const void* c = box.request("C");  // 12 + 20 + 12 fit in 48: A stays
  const void* d = box.request("D");
  box.run();
  EXPECT_EQ(box.status("A"), "loaded");
  EXPECT_EQ(box.status("C"), "loaded");
  EXPECT_EQ(box.status("D"), "loaded");
  EXPECT_EQ(box.r().memory_in_use().at("0"), 44 * kGiB);
  box.r().left(c);
  box.r().left(d);
  // Back to 24: the next load makes room again.
  box.config.gpus = {{"0", 24 * kGiB}};
  box.r().reload(box.config);
  box.now += 1min;  // past min_resident
  box.request("B");
  box.run();
  EXPECT_EQ(box.status("B"), "loaded");
  EXPECT_LE(box.r().memory_in_use().at("0"), 24 * kGiB);
}

TEST(ModelResidency, ACopyAReloadRetiredHoldsItsMemoryUntilItStops) {
  Box box;
  box.r().left(box.request("C"));  // 20 of 24 kGiB
  box.run();
  // A reload replaced C: the old copy finishes its requests; the new one is unloaded.
  box.env.table[2]->causes.set(AdminCause::reload_removing, true);
  box.env.table[2]->state = fleet::InstanceState::removed;
  box.add("c", "C", 20);
  box.r().reload(box.config);
  const void* waiting = box.request("C");
  box.run();
  EXPECT_EQ(box.status("C"), "unloaded");                      // no room yet: the load waits
  EXPECT_EQ(box.env.log, (std::vector<std::string>{"up c"}));  // the old copy's start only
  box.env.table[2]->state = fleet::InstanceState::stopped;     // its last request ended
  box.r().step();
  box.run();
  EXPECT_EQ(box.status("C"), "loaded");
  EXPECT_TRUE(box.env.table[3]->state == fleet::InstanceState::ready);
  box.r().left(waiting);
}

TEST(ModelResidency, ABusyModelIsDrainedBeforeItGoesNeverCut) {
  Box box(config::SwappingOptions::Policy::fifo);
  box.load_busy("A", 0);
  box.request("C");  // 20 kGiB: A must go
  box.run();
  // A takes nothing new and keeps its request; C waits.
  EXPECT_TRUE(box.env.table[0]->causes.has(AdminCause::model_evicting));
  EXPECT_EQ(box.status("A"), "loaded");
  EXPECT_EQ(box.status("C"), "loading");
  EXPECT_EQ(std::count(box.env.log.begin(), box.env.log.end(), "down a"), 0);
  box.env.busy[0] = 0;  // its request ended
  box.r().used(0);
  box.run();
  EXPECT_EQ(box.status("A"), "unloaded");
  EXPECT_EQ(box.status("C"), "loaded");
  const std::vector<std::string> tail{"down a", "up c"};
  EXPECT_EQ(std::vector<std::string>(box.env.log.end() - 2, box.env.log.end()), tail);
  EXPECT_TRUE(box.env.table[0]->causes.has(AdminCause::model_unloaded));
  EXPECT_FALSE(box.env.table[0]->causes.has(AdminCause::model_evicting));
}

TEST(ModelResidency, BatchServesALoadedModelsWorkUntilAWaiterAges) {
  Box box;  // batch
  box.load_busy("A", 0);
  box.request("A");  // A's queue
  box.request("C");
  box.run();
  EXPECT_EQ(box.status("C"), "unloaded");  // A keeps the card
  EXPECT_FALSE(box.env.table[0]->causes.has(AdminCause::model_evicting));
  box.now += 99s;  // 120 s max_wait - 20 s expected load: not yet
  box.r().step();
  EXPECT_EQ(box.status("C"), "unloaded");
  box.now += 1s;
  box.r().step();
  EXPECT_EQ(box.status("C"), "loading");
  EXPECT_TRUE(box.env.table[0]->causes.has(AdminCause::model_evicting));
}

// The card holds two of A, B, C (12 kGiB each): A loaded, idle and asked
// for `a_requests` times, B loaded with one request running; a second
// apart, so no two models' requests arrived together.
void a_idle_b_busy(Box& box, int a_requests) {
  box.config.instances[2].memory = box.env.table[2]->config.memory = 12 * kGiB;
  for (int i = 0; i < a_requests; ++i) {
    box.r().left(box.request("A"));
    box.run();
    box.now += 1s;
  }
  box.load_busy("B", 1);
  box.now += 1s;
}

// C, asked for: A stays and C waits for B's request to end, then takes
// B's place at once.
void c_takes_bs_place_once_b_is_done(Box& box) {
  box.run();
  EXPECT_EQ(box.status("C"), "unloaded");
  EXPECT_FALSE(box.env.table[0]->causes.has(AdminCause::model_evicting));
  box.env.busy[1] = 0;
  box.r().used(1);
  box.run();
  EXPECT_EQ(box.status("C"), "loaded");
  EXPECT_EQ(box.status("A"), "loaded");
  EXPECT_EQ(box.status("B"), "unloaded");
}

TEST(ModelResidency, BatchKeepsTheModelMoreInDemandAndWaitsForTheOneLess) {
  Box box;
  a_idle_b_busy(box, 3);  // A, asked for three times, against B's once
  box.request("C");
  c_takes_bs_place_once_b_is_done(box);
}

TEST(ModelResidency, BatchUnloadsTheModelAskedForTogetherWithTheWantedOneFirst) {
  Box box;
  a_idle_b_busy(box, 1);
  // An agent's parallel calls: B and C at once. B is now in more demand
  // than A, but needed in the same phase as C, and A after it.
  const void* b = box.request("B");
  box.request("C");
  box.r().left(b);  // routed to B, which runs it
  c_takes_bs_place_once_b_is_done(box);
}

TEST(ModelResidency, TheModelInDemandIsKeptOnlyUntilTheWaiterAges) {
  Box box;
  a_idle_b_busy(box, 3);
  box.request("C");
  box.now += 99s;  // max_wait 120 s minus C's expected load (switch_cost 20 s)
  box.r().step();
  EXPECT_EQ(box.status("C"), "unloaded");
  box.now += 1s;
  box.r().step();
  box.run();
  EXPECT_EQ(box.status("C"), "loaded");
  EXPECT_EQ(box.status("A"), "unloaded");  // idle: it goes before busy B
}

TEST(ModelResidency, AnIdleModelNoMoreInDemandOrUnderFifoGoesAtOnce) {
  Box equal;
  Box fifo(config::SwappingOptions::Policy::fifo);
  for (auto [box, a_requests] : {std::pair{&equal, 1}, std::pair{&fifo, 3}}) {
    a_idle_b_busy(*box, a_requests);
    box->request("C");
    box->run();
    EXPECT_EQ(box->status("C"), "loaded");
    EXPECT_EQ(box->status("A"), "unloaded");
  }
}

TEST(ModelResidency, DemandFadesWithinMinutes) {
  Box box;
  a_idle_b_busy(box, 3);
  box.now += 3min;  // A's three requests weigh 3/e^3 now, less than B's one
  box.request("B");
  box.now += 1s;
  box.request("C");
  box.run();
  EXPECT_EQ(box.status("C"), "loaded");
  EXPECT_EQ(box.status("A"), "unloaded");
}

TEST(ModelResidency, MinResidentHoldsEvenAnAgedWaiter) {
  Box box;
  box.config.swapping.max_wait = 30s;  // C ages at 10 s
  box.load_busy("A", 0);
  box.request("C");
  box.now += 15s;
  box.r().step();
  EXPECT_EQ(box.status("C"), "unloaded");  // A loaded 15 s ago, min_resident 30 s
  box.now += 15s;
  box.r().step();
  EXPECT_EQ(box.status("C"), "loading");
}

TEST(ModelResidency, FifoSwapsForTheOldestWaiter) {
  Box box(config::SwappingOptions::Policy::fifo);
  box.load_busy("A", 0);
  box.request("C");
  box.run();
  EXPECT_EQ(box.status("C"), "loading");  // at once: A drains
}

TEST(ModelResidency, ALoadEveryWaiterLeftIsCancelledWhenAnotherModelWaits) {
  Box box(config::SwappingOptions::Policy::fifo);
  box.load_busy("A", 0);
  const void* c = box.request("C");
  box.run();
  ASSERT_EQ(box.status("C"), "loading");
  box.r().left(c);  // C's only request gave up
  box.run();
  EXPECT_EQ(box.status("C"), "loading");  // nobody else waits: it goes on
  box.request("B");
  box.run();
  EXPECT_EQ(box.status("C"), "unloaded");
  EXPECT_FALSE(box.env.table[0]->causes.has(AdminCause::model_evicting));  // A serves again
  EXPECT_EQ(std::count(box.env.log.begin(), box.env.log.end(), "up c"), 0);
  EXPECT_NE(std::find(box.events.begin(), box.events.end(), "unloaded C cancelled"),
            box.events.end());
  box.r().step();  // B fits beside A now that C's room is not held for it
  box.run();
  EXPECT_EQ(box.status("B"), "loaded");
  EXPECT_EQ(box.status("A"), "loaded");
}

TEST(ModelResidency, TtlUnloadsAnIdleModel) {
  Box box;
  box.config.instances[0].ttl = 10min;
  box.env.table[0]->config.ttl = 10min;
  const void* a = box.request("A");
  box.run();
  box.r().left(a);
  box.now += 9min;
  box.r().step();
  box.run();
  EXPECT_EQ(box.status("A"), "loaded");
  box.now += 1min;
  box.r().step();
  box.run();
  EXPECT_EQ(box.status("A"), "unloaded");
  EXPECT_EQ(box.events.back(), "unloaded A ttl");
}

TEST(ModelResidency, AFailedLoadIsReportedWithItsReason) {
  Box box;
  box.env.fail_start["b"] = "engine exited with status 3";
  box.env.table[1]->exit_code = 3;
  box.env.table[1]->problem = "engine exited with status 3";
  box.request("B");
  box.run();
  EXPECT_EQ(box.events.back(), "failed B engine exited with status 3");
  const auto states = box.r().models();
  EXPECT_EQ(states[1].value, "unloaded");
  EXPECT_TRUE(states[1].failed);
  EXPECT_EQ(states[1].exit_code, 3);
  EXPECT_TRUE(box.env.table[1]->causes.has(AdminCause::model_unloaded));
}

TEST(ModelResidency, TheOperatorLoadsAndUnloads) {
  Box box;
  EXPECT_FALSE(box.r().load("A"));
  box.run();
  EXPECT_EQ(box.status("A"), "loaded");
  ASSERT_TRUE(box.r().load("A"));
  EXPECT_NE(box.r().load("A")->find("already running"), std::string::npos);
  EXPECT_FALSE(box.r().unload("A"));
  box.run();
  EXPECT_EQ(box.status("A"), "unloaded");
  EXPECT_NE(box.r().unload("A")->find("not running"), std::string::npos);
  EXPECT_EQ(box.events.back(), "unloaded A admin");
}

TEST(ModelResidency, ALoadsVictimsStopAtOnceNotOneAfterTheOther) {
  Box box;
  for (const auto* model : {"A", "B"}) {
    const void* id = box.request(model);
    box.run();
    box.r().left(id);
  }
  ASSERT_EQ(box.status("A"), "loaded");
  ASSERT_EQ(box.status("B"), "loaded");
  net::steady_timer gate(box.io, net::steady_timer::time_point::max());
  box.env.stop_gate = &gate;
  box.env.log.clear();
  box.request("C");  // 20 of 24: both must go
  box.run();
  EXPECT_EQ(box.env.log, (std::vector<std::string>{"down a", "down b"}));
  EXPECT_EQ(box.status("C"), "loading");
  gate.cancel();
  box.run();
  EXPECT_EQ(box.env.log, (std::vector<std::string>{"down a", "down b", "up c"}));
  EXPECT_EQ(box.status("C"), "loaded");
}

}  // namespace
}  // namespace switchyard::profiles
