// The simulator as a child of llama.cpp's router (common/router_child.h):
// with LLAMA_SERVER_ROUTER_PORT in its environment a llama-server reports on
// stdout how its load goes ("loading" with {"stages","current","value"}, the
// first at once, then at most every 200 ms, the last at 1.0), then "ready"
// with its model's info; from then on it reads stdin: a line
// "cmd_router_to_child:exit" stops it, end of file ends it at once with
// status 1 (its router is gone), and SIGTERM alone does not end it: it
// waits for one of those two first. Asleep (--sleep-idle-seconds) it says
// "sleeping"; woken, it reports a load again and "ready" with no info. The
// simulator does the same.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <memory>

namespace switchyard::sim {

class RouterChild {
 public:
  // Whether this process was started as a router's child.
  static bool wanted();

  // Reports a load of `load_seconds` (wall time, from now), then `info()`;
  // `stop` ends the process gracefully.
  RouterChild(boost::asio::any_io_executor executor, double load_seconds,
              std::function<boost::json::object()> info, std::function<void()> stop);
  ~RouterChild();

  // The engine fell asleep; it wakes, loading for that long.
  void slept();
  void waking(double load_seconds);

  // SIGTERM: still loading, stops now; ready, once stdin says so.
  void terminate();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::sim
