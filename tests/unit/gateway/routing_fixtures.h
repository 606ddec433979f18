// Candidates and queries for the tests of the routing policies.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "gateway/router.h"
#include "gateway/routing/home_wait.h"
#include "gateway/routing/homes.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/session_affinity.h"
#include "gateway/wait_queue.h"
#include "instance_table.h"

namespace switchyard::gateway::testing_support {

// The name of every instance of a fleet_of() (Candidate::name).
inline const std::string kGpu = "gpu";

// `n` idle instances of `slots` slots each, fleet indexes 0 to n-1.
inline std::vector<Candidate> fleet_of(int n, int slots = 2) {
  std::vector<Candidate> c;
  for (int i = 0; i < n; ++i)
    c.push_back(Candidate{static_cast<std::size_t>(i), 0, slots, true, 0, 1, &kGpu});
  return c;
}

// A request for model "m". A RouteQuery holds views: `prompt` and `session`
// must outlive it.
inline RouteQuery query(std::string_view prompt, std::string_view session = {}) {
  RouteQuery q;
  q.model = "m";
  q.prompt = prompt;
  q.session = session;
  return q;
}

// A clock the test moves. It starts an hour ahead of the real clock, so
// that a wait queue's timers for waits' ends (real time) never fire during
// a test.
struct FakeClock {
  using Clock = std::chrono::steady_clock;
  std::shared_ptr<Clock::time_point> now =
      std::make_shared<Clock::time_point>(Clock::now() + std::chrono::hours(1));
  std::function<Clock::time_point()> fn() const {
    return [now = now] { return *now; };
  }
  void advance(std::chrono::milliseconds d) const { *now += d; }
};

// A prompt of about `tokens` tokens of `topic` (4 bytes each) after `common`.
inline std::string prompt_of(char topic, long tokens, const std::string& common = {}) {
  return common + std::string(static_cast<std::size_t>(tokens) * 4, topic);
}

// 1000 prompt tokens a second, measured on a streamed answer.
template <class Policy>
void measure_prefill(Policy& p, const Candidate& c) {
  p.finished(c, RouteFeedback{4000, 0, 11, 4.1, -1, 0.1});
}

// An affinity policy (home_wait 5 s, the fake clock) whose prefill rate is
// measured, on `n` idle instances of `slots` slots.
template <class Policy>
struct MeasuredFleet {
  FakeClock clock;
  Policy p{1.25, Homes(clock.fn()), HomeWait(std::chrono::seconds(5), clock.fn())};
  std::vector<Candidate> c;
  explicit MeasuredFleet(int n, int slots = 2) : c(fleet_of(n, slots)) { measure_prefill(p, c[0]); }
};

// The session policy on two instances of model "m" with two slots each,
// its prefill rate measured, behind the real router and wait queue: a slot
// that frees, or a prefill that ends, hands the queue's waiters on.
struct QueuedSessionFleet {
  FakeClock clock;
  InstanceTable table;
  Router router;
  boost::asio::io_context io;
  WaitQueue queue{io.get_executor(), router, config::QueueOptions{100, std::chrono::seconds(60)}};

  QueuedSessionFleet() : router(two_instances(table), measured_policy(clock)) {
    router.on_release(
        [this](std::size_t index, const std::string& model) { queue.dispatch(model, index); });
  }

 private:
  static const InstanceTable& two_instances(InstanceTable& table) {
    add_instance(table, "m", 2);
    add_instance(table, "m", 2);
    return table;
  }
  static std::unique_ptr<SessionAffinity> measured_policy(const FakeClock& clock) {
    auto p = std::make_unique<SessionAffinity>(1.25, Homes(clock.fn()),
                                               HomeWait(std::chrono::seconds(5), clock.fn()));
    measure_prefill(*p, Candidate{0, 0, 2, true, 0, 0, &kGpu});
    return p;
  }
};

}  // namespace switchyard::gateway::testing_support
