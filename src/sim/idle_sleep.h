// llama-server's --sleep-idle-seconds in the simulator: after that long with
// no request that uses the model (completions, and /metrics, /slots: all
// but /health, /props and /models) the engine sleeps (frees its model);
// /health still answers 200, /props says "is_sleeping": true, and the next
// such request waits while the weights load again (as long as the first
// load did). tools/server/server-queue.cpp (start_loop, wait_until_no_sleep).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>

namespace switchyard::sim {

class IdleSleep {
  struct State;

 public:
  struct Hooks {
    std::function<void()> slept;                 // it fell asleep
    std::function<void(double seconds)> waking;  // a wake of that long began
  };

  // Idle time counts from the end of the first load (`load_seconds`, which a
  // wake takes again).
  IdleSleep(boost::asio::any_io_executor executor, double idle_seconds, double load_seconds,
            Hooks hooks);
  ~IdleSleep();
  IdleSleep(const IdleSleep&) = delete;
  IdleSleep& operator=(const IdleSleep&) = delete;

  bool asleep() const;

  // Keeps the engine awake while it lives.
  class Use {
   public:
    explicit Use(std::shared_ptr<State> state);
    Use(Use&& other) noexcept = default;
    ~Use();

   private:
    std::shared_ptr<State> state_;
  };
  // A request's hold: the engine woken first if it sleeps.
  boost::asio::awaitable<Use> use();

 private:
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::sim
