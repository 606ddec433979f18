#include "profiles/transition.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <map>
#include "../io_support.h"

namespace switchyard::profiles {
namespace {

using switchyard::testing_support::settle;

namespace net = boost::asio;
using namespace std::chrono_literals;
using fleet::AdminCause;

// Instances whose engines stop and start when the test opens the gate.
class GatedControl final : public InstanceControl {
 public:
  explicit GatedControl(net::io_context& io) : gate(io, net::steady_timer::time_point::max()) {}
  std::map<std::size_t, int> busy;
  std::map<std::size_t, fleet::AdminCauses> causes;
  std::map<std::size_t, std::string> fail_start;
  std::vector<std::string> log;
  net::steady_timer gate;

  int in_flight(std::size_t i) const override {
    auto it = busy.find(i);
    return it == busy.end() ? 0 : it->second;
  }
  void set_cause(std::size_t i, AdminCause c, bool on) override { causes[i].set(c, on); }
  net::awaitable<Outcome> bring_up(std::size_t i) override {
    co_await step("up", i);
    if (auto it = fail_start.find(i); it != fail_start.end()) co_return it->second;
    co_return std::nullopt;
  }
  net::awaitable<void> bring_down(std::size_t i) override { co_await step("down", i); }

 private:
  net::awaitable<void> step(std::string what, std::size_t i) {
    log.push_back(what + " " + std::to_string(i));
    co_await gate.async_wait(net::as_tuple(net::use_awaitable));
    log.push_back(what + " done " + std::to_string(i));
  }
};

const TransitionCauses causes{AdminCause::model_evicting, AdminCause::model_unloaded};

config::SwitchingOptions drain_timeout(std::chrono::milliseconds timeout, bool abort) {
  config::SwitchingOptions o;
  o.drain_timeout = timeout;
  o.abort_on_drain_timeout = abort;
  return o;
}

// The steps over gated engines, on an io_context the test drives.
struct StepsBox {
  net::io_context io;
  GatedControl control{io};
  Transition steps{io.get_executor(), control, causes};
};

// Runs `body` on `io` and keeps what it returned.
template <class T>
std::shared_ptr<std::optional<T>> spawn(net::io_context& io, net::awaitable<T> body) {
  auto out = std::make_shared<std::optional<T>>();
  net::co_spawn(io, std::move(body), [out](std::exception_ptr, T value) { *out = value; });
  return out;
}

TEST(Transition, StopsEveryInstanceAtOnceParkedThenStartsThemAtOnce) {
  StepsBox box;
  auto& [io, control, steps] = box;
  control.causes[0].set(AdminCause::model_evicting, true);
  bool stopped = false;
  net::co_spawn(io, steps.stop({0, 1}), [&](std::exception_ptr) { stopped = true; });
  settle(io);
  // Both began before either ended: engines stop in parallel.
  EXPECT_EQ(control.log, (std::vector<std::string>{"down 0", "down 1"}));
  EXPECT_TRUE(control.causes[0].has(AdminCause::model_unloaded));
  EXPECT_FALSE(control.causes[0].has(AdminCause::model_evicting));
  control.gate.cancel();
  settle(io);
  EXPECT_TRUE(stopped);

  control.log.clear();
  control.gate.expires_at(net::steady_timer::time_point::max());
  control.fail_start[1] = "exited with status 1";
  auto started = spawn(io, steps.start({0, 1}));
  settle(io);
  EXPECT_EQ(control.log, (std::vector<std::string>{"up 0", "up 1"}));
  control.gate.cancel();
  settle(io);
  ASSERT_TRUE(*started);
  EXPECT_EQ(**started, (std::vector<Outcome>{std::nullopt, "exited with status 1"}));
}

TEST(Transition, ADrainEndsWhenTheLastRequestDoesWokenNotPolled) {
  StepsBox box;
  auto& [io, control, steps] = box;
  control.busy = {{0, 1}, {1, 1}};
  auto drained = spawn(io, steps.drain({0, 1}, drain_timeout(1h, false), "test"));
  settle(io);
  control.busy[0] = 0;
  steps.notify();
  settle(io);
  EXPECT_FALSE(*drained) << "one request still runs";
  control.busy[1] = 0;
  steps.notify();
  settle(io);  // no timer has expired: notify() woke it
  ASSERT_TRUE(*drained);
  EXPECT_TRUE(**drained);
}

TEST(Transition, ACancelledDrainAnswersFalseAtOnce) {
  StepsBox box;
  auto& [io, control, steps] = box;
  control.busy[0] = 1;
  bool cancelled = false;
  std::function<bool()> is_cancelled = [&] { return cancelled; };
  auto drained = spawn(io, steps.drain({0}, drain_timeout(1h, false), "test", is_cancelled));
  settle(io);
  cancelled = true;
  steps.notify();
  settle(io);
  ASSERT_TRUE(*drained);
  EXPECT_FALSE(**drained);
}

TEST(Transition, PastTheDrainTimeoutAbortGoesOnAndWaitWaitsForTheRequests) {
  StepsBox box;
  auto& [io, control, steps] = box;
  control.busy[0] = 1;
  auto aborted = spawn(io, steps.drain({0}, drain_timeout(0ms, true), "test"));
  auto waited = spawn(io, steps.drain({0}, drain_timeout(0ms, false), "test"));
  settle(io);
  ASSERT_TRUE(*aborted);
  EXPECT_TRUE(**aborted);
  EXPECT_FALSE(*waited);
  control.busy[0] = 0;
  steps.notify();
  settle(io);
  EXPECT_TRUE(*waited);
}

TEST(Transition, ADrainSuspendedWhenTheStepsGoIsDestroyedSafely) {
  net::io_context io;
  GatedControl control(io);
  auto steps = std::make_unique<Transition>(io.get_executor(), control, causes);
  control.busy[0] = 1;
  auto drained = spawn(io, steps->drain({0}, drain_timeout(1h, false), "test"));
  settle(io);
  steps.reset();  // the drain's frame goes with the io_context, after this
  EXPECT_FALSE(*drained);
}

}  // namespace
}  // namespace switchyard::profiles
