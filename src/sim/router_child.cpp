#include "sim/router_child.h"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <istream>

#include <spdlog/spdlog.h>

#include "common/router_child.h"

namespace switchyard::sim {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

struct RouterChild::State : std::enable_shared_from_this<RouterChild::State> {
  State(net::any_io_executor ex, double seconds, std::function<boost::json::object()> i,
        std::function<void()> s)
      : timer(ex),
        input(ex),
        started(clock_type::now()),
        load_seconds(seconds),
        info(std::move(i)),
        stop(std::move(s)) {}

  // A load (again): from 0 to 1.0, then ready.
  void load(double seconds) {
    timer.cancel();
    started = clock_type::now();
    load_seconds = seconds;
    first = true;
    tick();
  }

  static void report(const EngineState& state) {
    const auto line = engine_state_line(state) + "\n";
    spdlog::default_logger()->flush();  // the log and the reports share stdout
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }

  void tick() {
    const double elapsed = std::chrono::duration<double>(clock_type::now() - started).count();
    // As llama.cpp's loader: the first report says 0, the last 1.
    const double value = load_seconds <= 0 ? 1.0
                         : first           ? 0.0
                                           : std::min(1.0, elapsed / load_seconds);
    first = false;
    report({"loading",
            {{"stages", boost::json::array{"text_model"}},
             {"current", "text_model"},
             {"value", value}}});
    if (value >= 1.0) {
      // After a sleep llama-server says "ready" without its model's info.
      report({"ready", served ? boost::json::object{} : info()});
      if (!served) watch_input_from_now();
      served = true;
      return;
    }
    const auto left = std::chrono::duration<double>(load_seconds - elapsed);
    timer.expires_after(std::min<clock_type::duration>(
        std::chrono::milliseconds(200), std::chrono::duration_cast<clock_type::duration>(left)));
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->tick();
    });
  }

  // As llama-server, from ready on.
  void watch_input_from_now() {
    boost::system::error_code ec;
    const int fd = ::dup(STDIN_FILENO);
    if (fd >= 0) input.assign(fd, ec);
    if (fd >= 0 && !ec) return watch_input();
    if (fd >= 0) ::close(fd);
    spdlog::warn("sim: stdin cannot be watched for the router's exit command");
  }

  void watch_input() {
    net::async_read_until(input, buffer, '\n',
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                            self->heard(ec);
                          });
  }

  void heard(boost::system::error_code ec) {
    if (ec == net::error::operation_aborted) return;
    if (ec) {
      spdlog::info("sim: EOF on stdin detected, forcing shutdown");
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }
    std::istream in(&buffer);
    std::string line;
    std::getline(in, line);
    if (line.find(kRouterExitCommand) == std::string::npos) return watch_input();
    spdlog::info("sim: exit command received, exiting...");
    stop();
  }

  net::steady_timer timer;
  net::posix::stream_descriptor input;
  net::streambuf buffer;
  clock_type::time_point started;
  double load_seconds;
  bool first = true;
  bool served = false;  // ready once
  std::function<boost::json::object()> info;
  std::function<void()> stop;
};

bool RouterChild::wanted() {
  return std::getenv(kRouterPortVariable) != nullptr;
}

RouterChild::RouterChild(net::any_io_executor executor, double load_seconds,
                         std::function<boost::json::object()> info, std::function<void()> stop)
    : state_(std::make_shared<State>(executor, load_seconds, std::move(info), std::move(stop))) {
  state_->tick();
}

void RouterChild::slept() {
  State::report({"sleeping", {}});
}

void RouterChild::waking(double load_seconds) {
  state_->load(load_seconds);
}

void RouterChild::terminate() {
  if (!state_->input.is_open()) return state_->stop();
  spdlog::info("sim: stopping once the router says so on stdin, as llama-server does");
}

RouterChild::~RouterChild() {
  boost::system::error_code ec;
  state_->timer.cancel();
  state_->input.cancel(ec);
}

}  // namespace switchyard::sim
