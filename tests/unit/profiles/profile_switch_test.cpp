#include "profiles/profile_switch.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <algorithm>
#include <map>
#include "../io_support.h"

namespace switchyard::profiles {
namespace {

using switchyard::testing_support::run_until;
using switchyard::testing_support::settle;

namespace net = boost::asio;
using namespace std::chrono_literals;

// Instances by name with a log of what the switch did to them.
class FakeEnv final : public SwitchEnv {
 public:
  std::vector<std::string> names{"xtx0", "xtx1", "tp2"};
  std::map<std::size_t, int> busy;
  std::map<std::size_t, AdminState> admin;  // derived from causes
  std::map<std::size_t, fleet::AdminCauses> causes;
  FakeEnv() { causes[2].set(AdminCause::profile_parked, true); }  // tp2: not in the first profile
  std::map<std::string, std::string> fail_start;                  // name → why
  std::chrono::milliseconds delay{0};                             // of each bring_up and bring_down
  std::vector<std::string> log;

  net::awaitable<void> take_time(std::string what) {
    if (delay.count() == 0) co_return;
    net::steady_timer t(co_await net::this_coro::executor, delay);
    co_await t.async_wait(net::use_awaitable);
    log.push_back(std::move(what));
  }

  std::optional<std::size_t> find(const std::string& name) const override {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return i;
    return std::nullopt;
  }
  std::string name(std::size_t i) const override { return names[i]; }
  std::string model(std::size_t) const override { return "qwen-27b"; }
  int in_flight(std::size_t i) const override {
    auto it = busy.find(i);
    return it == busy.end() ? 0 : it->second;
  }
  void set_cause(std::size_t i, AdminCause c, bool on) override {
    const auto before = causes[i].state();
    causes[i].set(c, on);
    admin[i] = causes[i].state();
    // Parking shows as the bring_down that follows it.
    if (admin[i] != before && admin[i] != AdminState::parked)
      log.push_back(names[i] + " " + to_string(admin[i]));
  }
  net::awaitable<std::optional<std::string>> bring_up(std::size_t i) override {
    log.push_back("up " + names[i]);
    co_await take_time("up done " + names[i]);
    if (auto it = fail_start.find(names[i]); it != fail_start.end()) co_return it->second;
    co_return std::nullopt;
  }
  net::awaitable<void> bring_down(std::size_t i) override {
    log.push_back("down " + names[i]);
    co_await take_time("down done " + names[i]);
  }
  net::awaitable<std::optional<std::string>> warm(std::size_t i) override {
    log.push_back("warm " + names[i]);
    co_return std::nullopt;
  }
};

std::vector<ProfileConfig> profiles() {
  return {{"replicas", {"xtx0", "xtx1"}}, {"tp2", {"tp2"}}};
}

TEST(ProfileSwitch, DrainsStopsStartsWarmsThenActivates) {
  net::io_context io;
  FakeEnv env;
  env.busy[0] = 1;  // a request still running on xtx0
  SwitchingOptions o;
  ProfileSwitch sw(io.get_executor(), profiles(), o, env);
  EXPECT_EQ(sw.active(), "replicas");
  ASSERT_FALSE(sw.begin("tp2", "manual"));
  // Draining at once, before anything runs: nothing new is routed to them.
  EXPECT_EQ(sw.phase(), SwitchPhase::draining);
  EXPECT_EQ(env.admin[0], AdminState::draining);
  EXPECT_EQ(env.admin[1], AdminState::draining);
  EXPECT_EQ(sw.held_models().count("qwen-27b"), 1u);
  settle(io);
  EXPECT_EQ(sw.phase(), SwitchPhase::draining);  // waits for the request
  env.busy[0] = 0;
  sw.notify();
  std::optional<SwitchRecord> done;
  net::co_spawn(
      io, [&]() -> net::awaitable<void> { done = co_await sw.wait_done(); }, net::detached);
  run_until(io, [&] { return done.has_value(); });
  ASSERT_TRUE(done);
  EXPECT_TRUE(done->ok) << done->error;
  EXPECT_EQ(sw.active(), "tp2");
  EXPECT_EQ(sw.phase(), SwitchPhase::active);
  EXPECT_TRUE(sw.held_models().empty());
  const std::vector<std::string> expected{"xtx0 draining", "xtx1 draining", "down xtx0",
                                          "down xtx1",     "up tp2",        "warm tp2",
                                          "tp2 active"};
  EXPECT_EQ(env.log, expected);
}

TEST(ProfileSwitch, AFailedStartRollsBackAndSaysWhy) {
  net::io_context io;
  FakeEnv env;
  env.fail_start["tp2"] = "engine exited with status 2";
  ProfileSwitch sw(io.get_executor(), profiles(), SwitchingOptions{}, env);
  std::optional<SwitchRecord> finished;
  sw.on_done([&](const SwitchRecord& r) { finished = r; });
  ASSERT_FALSE(sw.begin("tp2", "manual"));
  run_until(io, [&] { return finished.has_value(); });
  ASSERT_TRUE(finished);
  EXPECT_FALSE(finished->ok);
  EXPECT_NE(finished->error.find("tp2 did not start: engine exited with status 2"),
            std::string::npos)
      << finished->error;
  EXPECT_EQ(sw.active(), "replicas");
  EXPECT_EQ(sw.phase(), SwitchPhase::active);
  EXPECT_EQ(env.admin[0], AdminState::active);
  EXPECT_EQ(env.admin[1], AdminState::active);
  const std::vector<std::string> tail{"down tp2", "up xtx0", "up xtx1", "xtx0 active",
                                      "xtx1 active"};
  ASSERT_GE(env.log.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(env.log.end() - tail.size(), env.log.end()), tail);
}

TEST(ProfileSwitch, StopsAndStartsAProfilesInstancesAtOnce) {
  net::io_context io;
  FakeEnv env;
  env.delay = 50ms;  // each engine takes this long to stop or to load
  ProfileSwitch sw(io.get_executor(), profiles(), SwitchingOptions{}, env);
  ASSERT_FALSE(sw.begin("tp2", "manual"));
  run_until(io, [&] { return !sw.switching(); });
  ASSERT_EQ(sw.active(), "tp2");
  ASSERT_FALSE(sw.begin("replicas", "manual"));
  run_until(io, [&] { return !sw.switching(); });
  ASSERT_EQ(sw.active(), "replicas");
  // Both replicas are told to stop before either has, and to start before
  // either is up: the switch pays one engine's time, not the sum.
  const std::vector<std::string> down{"down xtx0", "down xtx1", "down done xtx0", "down done xtx1"};
  const std::vector<std::string> up{"up xtx0", "up xtx1", "up done xtx0", "up done xtx1"};
  const auto at = [&](const std::string& line) {
    return std::find(env.log.begin(), env.log.end(), line) - env.log.begin();
  };
  EXPECT_EQ(std::vector<std::string>(env.log.begin() + at("down xtx0"),
                                     env.log.begin() + at("down xtx0") + 4),
            down);
  EXPECT_EQ(std::vector<std::string>(env.log.begin() + at("up xtx0"),
                                     env.log.begin() + at("up xtx0") + 4),
            up);
}

TEST(ProfileSwitch, AnOperatorsDrainOutlivesASwitchAndBack) {
  net::io_context io;
  FakeEnv env;
  env.causes[0].set(AdminCause::operator_drain, true);  // switchyard admin drain xtx0
  ProfileSwitch sw(io.get_executor(), profiles(), SwitchingOptions{}, env);
  ASSERT_FALSE(sw.begin("tp2", "manual"));
  run_until(io, [&] { return !sw.switching(); });
  ASSERT_EQ(sw.active(), "tp2");
  EXPECT_EQ(env.admin[0], AdminState::parked);
  ASSERT_FALSE(sw.begin("replicas", "manual"));
  run_until(io, [&] { return !sw.switching(); });
  ASSERT_EQ(sw.active(), "replicas");
  EXPECT_EQ(env.admin[0], AdminState::draining);  // still the operator's
  EXPECT_TRUE(env.causes[0].has(AdminCause::operator_drain));
  EXPECT_EQ(env.admin[1], AdminState::active);
  EXPECT_EQ(env.admin[2], AdminState::parked);
}

TEST(ProfileSwitch, RefusesUnknownActiveAndConcurrentSwitches) {
  net::io_context io;
  FakeEnv env;
  ProfileSwitch sw(io.get_executor(), profiles(), SwitchingOptions{}, env);
  EXPECT_TRUE(sw.begin("nope", "manual"));
  EXPECT_TRUE(sw.begin("replicas", "manual"));
  ASSERT_FALSE(sw.begin("tp2", "manual"));
  const auto second = sw.begin("replicas", "manual");
  ASSERT_TRUE(second);
  EXPECT_NE(second->find("is running"), std::string::npos) << *second;
  run_until(io, [&] { return !sw.switching(); });
  EXPECT_EQ(sw.active(), "tp2");
}

TEST(ProfileSwitch, AbortOnDrainTimeoutGoesOnWithRequestsInFlight) {
  net::io_context io;
  FakeEnv env;
  env.busy[1] = 3;
  SwitchingOptions o;
  o.drain_timeout = 0ms;
  o.abort_on_drain_timeout = true;
  ProfileSwitch sw(io.get_executor(), profiles(), o, env);
  ASSERT_FALSE(sw.begin("tp2", "manual"));
  run_until(io, [&] { return !sw.switching(); });
  EXPECT_EQ(sw.active(), "tp2");
  // The default (wait) does not.
  net::io_context io2;
  FakeEnv env2;
  env2.busy[1] = 3;
  o.abort_on_drain_timeout = false;
  ProfileSwitch waits(io2.get_executor(), profiles(), o, env2);
  ASSERT_FALSE(waits.begin("tp2", "manual"));
  settle(io2);
  EXPECT_EQ(waits.phase(), SwitchPhase::draining);
  EXPECT_EQ(waits.active(), "replicas");
}

}  // namespace
}  // namespace switchyard::profiles
