#include "fleet/fleet.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <signal.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "fleet/child_process.h"

namespace switchyard::fleet {

namespace net = boost::asio;
using net::awaitable;
using namespace std::chrono_literals;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

const char* to_string(InstanceState state) {
  switch (state) {
    case InstanceState::starting:
      return "starting";
    case InstanceState::ready:
      return "ready";
    case InstanceState::down:
      return "down";
    case InstanceState::stopped:
      return "stopped";
  }
  return "unknown";
}

namespace {

// A free loopback port for a supervised engine. Another process could take it
// before the engine binds; the engine then fails to start and says so.
Result<std::uint16_t> free_port() {
  net::io_context io;
  net::ip::tcp::acceptor a(io);
  boost::system::error_code ec;
  a.open(net::ip::tcp::v4(), ec);
  if (!ec) a.bind({net::ip::address_v4::loopback(), 0}, ec);
  if (ec) return Error{"cannot find a free port: " + ec.message()};
  return a.local_endpoint().port();
}

std::string substitute(std::string text, std::string_view key, std::string_view value) {
  for (std::size_t pos = 0; (pos = text.find(key, pos)) != std::string::npos; pos += value.size())
    text.replace(pos, key.size(), value);
  return text;
}

awaitable<void> sleep_for(std::chrono::milliseconds d) {
  net::steady_timer t(co_await net::this_coro::executor, d);
  co_await t.async_wait(use_tuple);
}

}  // namespace

struct Fleet::State : std::enable_shared_from_this<Fleet::State> {
  struct Supervised {
    std::optional<ChildProcess> process;
  };

  awaitable<void> run_instance(Instance& inst);
  awaitable<void> relay_output(std::string name, int fd);
  awaitable<int> probe_health(Instance& inst, http::UpstreamPool& probe);
  awaitable<std::optional<int>> read_slots(http::UpstreamPool& probe);
  void set_state(Instance& inst, InstanceState s);

  net::any_io_executor executor;
  FleetConfig config;
  std::string self_path;
  std::vector<std::unique_ptr<Instance>> instances;
  std::vector<Supervised> supervised;  // by instance index
  std::function<void(const Instance&)> on_change;
  bool stopping = false;
};

Fleet::Fleet(net::any_io_executor executor, const FleetConfig& config, std::string self_path)
    : state_(std::make_shared<State>()) {
  state_->executor = executor;
  state_->config = config;
  state_->self_path = std::move(self_path);
  for (std::size_t i = 0; i < config.instances.size(); ++i) {
    auto inst = std::make_unique<Instance>();
    inst->index = i;
    inst->config = config.instances[i];
    inst->slots = inst->config.slots.value_or(1);
    state_->instances.push_back(std::move(inst));
  }
  state_->supervised.resize(config.instances.size());
}

Fleet::~Fleet() = default;

const std::vector<std::unique_ptr<Instance>>& Fleet::instances() const {
  return state_->instances;
}

void Fleet::on_change(std::function<void(const Instance&)> callback) {
  state_->on_change = std::move(callback);
}

void Fleet::start() {
  for (auto& inst : state_->instances)
    net::co_spawn(state_->executor, state_->run_instance(*inst), net::detached);
}

void Fleet::State::set_state(Instance& inst, InstanceState s) {
  if (inst.state == s) return;
  spdlog::info("instance {} ({}): {} -> {}", inst.name(), inst.model(), to_string(inst.state),
               to_string(s));
  inst.state = s;
  if (on_change) on_change(inst);
}

awaitable<void> Fleet::State::run_instance(Instance& inst) {
  auto self = shared_from_this();
  const auto& t = config.timeouts;
  http::UpstreamOptions traffic{t.connect, t.first_byte, t.stream_idle, 32};
  // Probes fail fast: a slow /health means "not ready yet".
  http::UpstreamOptions probing{1000ms, 2000ms, 2000ms, 1};

  if (inst.config.url) {
    auto url = http::parse_url(*inst.config.url);
    if (!url) {
      spdlog::error("instance {}: {}", inst.name(), url.error().message);
      set_state(inst, InstanceState::down);
      co_return;
    }
    inst.url = *url;
  } else {
    auto port = free_port();
    if (!port) {
      spdlog::error("instance {}: {}", inst.name(), port.error().message);
      set_state(inst, InstanceState::down);
      co_return;
    }
    std::string command = *inst.config.command;
    command = substitute(command, "${PORT}", std::to_string(*port));
    command = substitute(command, "${GPUS}", inst.config.gpus);
    command = substitute(command, "${SWITCHYARD}", self_path);
    auto child = ChildProcess::spawn(command, inst.config.env);
    if (!child) {
      spdlog::error("instance {}: {}", inst.name(), child.error().message);
      set_state(inst, InstanceState::down);
      co_return;
    }
    spdlog::info("instance {}: started pid {}: {}", inst.name(), child->pid(), command);
    net::co_spawn(executor, relay_output(inst.name(), child->release_output_fd()), net::detached);
    supervised[inst.index].process = std::move(*child);
    inst.url = http::Url{"127.0.0.1", *port, ""};
  }
  inst.pool = std::make_unique<http::UpstreamPool>(executor, *inst.url, traffic);
  http::UpstreamPool probe(executor, *inst.url, probing);

  // Wait for /health 200, watching a supervised process for an early exit.
  const auto deadline = std::chrono::steady_clock::now() + t.startup;
  auto& sup = supervised[inst.index];
  for (;;) {
    if (stopping) co_return;
    int status = 0;
    if (sup.process && sup.process->try_wait(status)) {
      spdlog::error("instance {}: engine {} during start-up", inst.name(), describe_exit(status));
      sup.process->signal(SIGKILL);
      sup.process.reset();
      set_state(inst, InstanceState::down);
      co_return;
    }
    if (co_await probe_health(inst, probe) == 200) break;
    if (std::chrono::steady_clock::now() > deadline) {
      spdlog::error("instance {}: not healthy within timeouts.startup ({} s)", inst.name(),
                    std::chrono::duration_cast<std::chrono::seconds>(t.startup).count());
      if (sup.process) sup.process->signal(SIGKILL);
      set_state(inst, InstanceState::down);
      co_return;
    }
    co_await sleep_for(100ms);
  }
  if (!inst.config.slots) {
    if (auto slots = co_await read_slots(probe)) {
      inst.slots = *slots;
    } else {
      spdlog::warn("instance {}: slots not set and /props has no total_slots; assuming 1",
                   inst.name());
    }
  }
  spdlog::info("instance {}: healthy at {}, {} slot(s)", inst.name(), inst.url->authority(),
               inst.slots);
  set_state(inst, InstanceState::ready);

  // Until restarts come (they are the supervisor's next step), an engine
  // that exits is marked down so no request is sent to it.
  while (sup.process && !stopping) {
    int status = 0;
    if (sup.process->try_wait(status)) {
      spdlog::error("instance {}: engine {}", inst.name(), describe_exit(status));
      sup.process->signal(SIGKILL);  // whatever the shell left behind
      sup.process.reset();
      set_state(inst, InstanceState::down);
      co_return;
    }
    co_await sleep_for(250ms);
  }
}

awaitable<int> Fleet::State::probe_health(Instance& inst, http::UpstreamPool& probe) {
  (void)inst;
  http::UpstreamCall call(probe);
  http::UpstreamRequest req;
  req.method = "GET";
  req.target = "/health";
  auto head = co_await call.send(req);
  if (!head) co_return 0;
  auto body = co_await call.read_all(64 * 1024);
  co_return body ? head->status : 0;
}

awaitable<std::optional<int>> Fleet::State::read_slots(http::UpstreamPool& probe) {
  http::UpstreamCall call(probe);
  http::UpstreamRequest req;
  req.method = "GET";
  req.target = "/props";
  auto head = co_await call.send(req);
  if (!head || head->status != 200) co_return std::nullopt;
  auto body = co_await call.read_all(1 << 20);
  if (!body) co_return std::nullopt;
  boost::system::error_code ec;
  auto doc = boost::json::parse(*body, ec);
  if (ec || !doc.is_object()) co_return std::nullopt;
  const auto* slots = doc.get_object().if_contains("total_slots");
  if (!slots || !slots->is_int64() || slots->get_int64() < 1) co_return std::nullopt;
  co_return static_cast<int>(slots->get_int64());
}

awaitable<void> Fleet::State::relay_output(std::string name, int fd) {
  auto self = shared_from_this();
  net::posix::stream_descriptor pipe(executor, fd);
  std::string pending;
  char buf[4096];
  for (;;) {
    auto [ec, n] = co_await pipe.async_read_some(net::buffer(buf), use_tuple);
    if (ec) break;
    pending.append(buf, n);
    for (std::size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      spdlog::info("[{}] {}", name, std::string_view(pending).substr(0, eol));
      pending.erase(0, eol + 1);
    }
  }
  if (!pending.empty()) spdlog::info("[{}] {}", name, pending);
}

awaitable<void> Fleet::stop() {
  auto s = state_;
  s->stopping = true;
  for (auto& sup : s->supervised)
    if (sup.process) sup.process->signal(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + s->config.timeouts.stop;
  bool killed = false;
  for (;;) {
    bool running = false;
    for (std::size_t i = 0; i < s->supervised.size(); ++i) {
      auto& sup = s->supervised[i];
      if (!sup.process) continue;
      if (sup.process->group_alive()) {
        running = true;
        continue;
      }
      spdlog::info("instance {}: engine stopped{}", s->instances[i]->name(),
                   killed ? " (killed after timeouts.stop)" : "");
      sup.process.reset();
    }
    if (!running) break;
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      spdlog::warn("engines still running after timeouts.stop: sending SIGKILL");
      for (auto& sup : s->supervised)
        if (sup.process) sup.process->signal(SIGKILL);
      killed = true;
    }
    co_await sleep_for(20ms);
  }
  for (auto& inst : s->instances) s->set_state(*inst, InstanceState::stopped);
}

}  // namespace switchyard::fleet
