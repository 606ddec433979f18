#include "fleet/fleet.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/scoped_member.h"
#include "fleet/child_process.h"
#include "http/use_tuple.h"

namespace switchyard::fleet {

namespace net = boost::asio;
using net::awaitable;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using http::use_tuple;

const char* to_string(InstanceState state) {
  switch (state) {
    case InstanceState::starting:
      return "starting";
    case InstanceState::ready:
      return "ready";
    case InstanceState::ejected:
      return "ejected";
    case InstanceState::restarting:
      return "restarting";
    case InstanceState::crash_looping:
      return "crash-looping";
    case InstanceState::down:
      return "down";
    case InstanceState::removed:
      return "removed";
    case InstanceState::stopped:
      return "stopped";
  }
  return "unknown";
}

const char* to_string(AdminState state) {
  switch (state) {
    case AdminState::active:
      return "active";
    case AdminState::draining:
      return "draining";
    case AdminState::parked:
      return "parked";
  }
  return "unknown";
}

const char* to_string(AdminCause cause) {
  switch (cause) {
    case AdminCause::operator_drain:
      return "operator";
    case AdminCause::profile_draining:
      return "profile-draining";
    case AdminCause::profile_parked:
      return "profile-parked";
    case AdminCause::reload_removing:
      return "reload-removing";
    case AdminCause::model_evicting:
      return "model-evicting";
    case AdminCause::model_unloaded:
      return "model-unloaded";
  }
  return "unknown";
}

std::string AdminCauses::describe() const {
  std::string out;
  for (auto c :
       {AdminCause::operator_drain, AdminCause::profile_draining, AdminCause::profile_parked,
        AdminCause::reload_removing, AdminCause::model_evicting, AdminCause::model_unloaded})
    if (has(c)) out += (out.empty() ? "" : ", ") + std::string(to_string(c));
  return out;
}

namespace {

// A free loopback port for a supervised engine. Another process could take it
// before the engine binds; the engine then fails to start and is restarted.
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

std::chrono::milliseconds doubled(std::chrono::milliseconds d, std::chrono::milliseconds cap) {
  return std::min(d * 2, cap);
}

}  // namespace

struct Fleet::State : std::enable_shared_from_this<Fleet::State> {
  // Per-instance supervision state, owned by that instance's coroutine.
  struct Watch {
    explicit Watch(net::any_io_executor ex) : wake(ex) {}
    std::optional<ChildProcess> process;
    // The wait status of `process`'s direct child, once the reaper has it.
    std::optional<int> exit_status;
    net::steady_timer wake;  // cut short by report_failure(), stop(), an exit, a ready report
    std::set<net::steady_timer*> state_waits;  // bring_up()s waiting: cut short by set_state()
    int crashes = 0;  // consecutive exits, each within crash_window of the last
    clock_type::time_point last_crash{};
    bool halted = false;       // taken down on purpose (a profile switched off): not restarted
    bool supervising = false;  // supervise() runs for it
  };

  std::size_t add(const config::InstanceConfig& config);
  // Not started: waits for its profile or its model's load.
  void park(Instance& inst, AdminCause cause);
  awaitable<void> stop_processes(std::vector<std::size_t> indices);
  bool done(const Instance& inst) const {
    return stopping || inst.state == InstanceState::removed || watches[inst.index]->halted;
  }
  awaitable<int> call(Instance& inst, std::string method, std::string target, std::string body,
                      std::chrono::milliseconds timeout);
  awaitable<void> supervise(Instance& inst);
  awaitable<bool> launch(Instance& inst, Watch& watch);
  awaitable<bool> wait_healthy(Instance& inst, Watch& watch);
  awaitable<void> after_exit(Instance& inst, Watch& watch);
  awaitable<void> relay_output(std::size_t index, int fd);
  void output_line(Instance& inst, std::string_view line);
  awaitable<bool> healthy(http::UpstreamPool& probe);
  // /props: total_slots, and the KV cache (default_generation_settings.n_ctx
  // per slot); zeros for what it does not say.
  struct Props {
    int slots = 0;
    long slot_context = 0;
  };
  awaitable<Props> read_props(http::UpstreamPool& probe);
  awaitable<void> nap(Watch& watch, std::chrono::milliseconds d);
  void set_state(Instance& inst, InstanceState s);

  net::any_io_executor executor;
  std::unique_ptr<ChildReaper> reaper;
  // The timers of stop_processes() calls waiting, cut short whenever a child
  // was reaped.
  std::set<net::steady_timer*> stop_waits;
  config::FleetConfig config;
  std::string self_path;
  std::vector<std::unique_ptr<Instance>> instances;
  std::vector<std::unique_ptr<Watch>> watches;  // by instance index
  std::function<void(const Instance&)> on_change;
  std::function<void(const Instance&, const EngineState&)> on_engine_state;
  bool stopping = false;
};

Fleet::Fleet(net::any_io_executor executor, const config::FleetConfig& config,
             std::string self_path)
    : state_(std::make_shared<State>()) {
  state_->executor = executor;
  state_->reaper = std::make_unique<ChildReaper>(executor);
  state_->reaper->on_any_exit([s = state_.get()] {
    for (auto* t : s->stop_waits) t->cancel();
  });
  state_->config = config;
  state_->self_path = std::move(self_path);
  for (const auto& inst : config.instances) state_->add(inst);
  // Only the first profile runs at start; the others' instances wait parked.
  std::set<std::string> first, others;
  for (std::size_t p = 0; p < config.profiles.size(); ++p)
    for (const auto& name : config.profiles[p].instances) (p == 0 ? first : others).insert(name);
  for (auto& inst : state_->instances) {
    if (inst->config.load == config::LoadMode::on_demand) {
      state_->park(*inst, AdminCause::model_unloaded);
      continue;
    }
    if (!others.count(inst->name()) || first.count(inst->name())) continue;
    state_->park(*inst, AdminCause::profile_parked);
  }
}

void Fleet::State::park(Instance& inst, AdminCause cause) {
  inst.causes.set(cause, true);
  inst.state = InstanceState::stopped;
  watches[inst.index]->halted = true;
}

std::size_t Fleet::State::add(const config::InstanceConfig& config) {
  auto inst = std::make_unique<Instance>();
  inst->index = instances.size();
  inst->config = config;
  inst->slots = config.slots.value_or(1);
  instances.push_back(std::move(inst));
  watches.push_back(std::make_unique<Watch>(executor));
  return instances.size() - 1;
}

Fleet::~Fleet() = default;

const std::vector<std::unique_ptr<Instance>>& Fleet::instances() const {
  return state_->instances;
}

void Fleet::on_change(std::function<void(const Instance&)> callback) {
  state_->on_change = std::move(callback);
}

void Fleet::on_engine_state(std::function<void(const Instance&, const EngineState&)> callback) {
  state_->on_engine_state = std::move(callback);
}

void Fleet::start() {
  std::vector<std::size_t> early;
  for (auto& inst : state_->instances)
    if (inst->config.prestart && inst->config.load == config::LoadMode::always &&
        state_->watches[inst->index]->halted)
      early.push_back(inst->index);
  if (early.empty()) {
    start_unhalted();
    return;
  }
  net::co_spawn(state_->executor, prestart(std::move(early)), net::detached);
}

void Fleet::start_unhalted() {
  for (auto& inst : state_->instances)
    if (!state_->watches[inst->index]->halted)
      net::co_spawn(state_->executor, state_->supervise(*inst), net::detached);
}

awaitable<void> Fleet::prestart(std::vector<std::size_t> early) {
  auto s = state_;
  // One at a time and all asleep before the first profile starts: two
  // engines are never awake on one card.
  for (auto index : early) {
    const auto name = s->instances[index]->name();
    spdlog::info("instance {}: prestart: starting it to sleep before the first profile starts",
                 name);
    if (auto error = co_await bring_up(index))
      spdlog::warn("instance {}: prestart failed ({}); it starts cold on its first switch", name,
                   *error);
    co_await bring_down(index);
    if (s->stopping) co_return;
  }
  start_unhalted();
}

Fleet::Changes Fleet::apply(const config::FleetConfig& config) {
  auto& s = *state_;
  Changes changes;
  std::vector<bool> kept(s.instances.size(), false);
  // Switched off by its profile (stopped or asleep): a changed copy stays
  // off too, or a reload would start it beside the profile using its GPUs.
  const auto off = [&](const Instance& inst) {
    return inst.admin() == AdminState::parked && (s.watches[inst.index]->halted || inst.asleep);
  };
  std::map<std::size_t, AdminCauses> start_parked;  // new index → the old copy's causes
  for (const auto& wanted : config.instances) {
    bool unchanged = false, parked = false;
    AdminCauses causes;
    for (auto& inst : s.instances) {
      if (inst->name() != wanted.name || inst->state == InstanceState::removed ||
          (inst->state == InstanceState::stopped && !off(*inst)))
        continue;
      unchanged = inst->config == wanted;
      parked = off(*inst);
      causes = inst->causes;
      if (unchanged) kept[inst->index] = true;
      break;
    }
    if (unchanged) continue;
    const auto index = s.add(wanted);
    changes.added.push_back(index);
    if (parked) start_parked[index] = causes;
  }
  for (std::size_t i = 0; i < kept.size(); ++i) {
    auto& inst = *s.instances[i];
    if (kept[i] || inst.state == InstanceState::removed ||
        (inst.state == InstanceState::stopped && !off(inst)))
      continue;
    inst.causes.set(AdminCause::reload_removing, true);
    s.set_state(inst, InstanceState::removed);
    s.watches[i]->wake.cancel();  // its supervision ends
    changes.removed.push_back(i);
  }
  s.config = config;
  for (auto i : changes.added) {
    if (auto old = start_parked.find(i); old != start_parked.end()) {
      auto& inst = *s.instances[i];
      inst.causes = old->second;
      inst.state = InstanceState::stopped;
      s.watches[i]->halted = true;
      continue;
    }
    if (s.instances[i]->config.load == config::LoadMode::on_demand) {
      s.park(*s.instances[i], AdminCause::model_unloaded);
      continue;
    }
    net::co_spawn(s.executor, s.supervise(*s.instances[i]), net::detached);
  }
  return changes;
}

net::awaitable<void> Fleet::stop_instance(std::size_t index) {
  std::vector<std::size_t> one{index};
  co_await state_->stop_processes(std::move(one));
  state_->set_state(*state_->instances.at(index), InstanceState::stopped);
}

void Fleet::report_failure(std::size_t index, const std::string& reason) {
  auto& s = *state_;
  auto& inst = *s.instances.at(index);
  if (inst.state != InstanceState::ready) return;
  // Never eject more than half of a model's instances on requests' word
  // alone (Envoy's max_ejection_percent): when failures are everywhere the
  // cause is rarely the instances, and ejecting all would refuse everything.
  int peers = 0, out = 0;
  for (const auto& other : s.instances) {
    if (other->model() != inst.model() || !other->causes.empty()) continue;
    ++peers;
    out += other->state == InstanceState::ejected;
  }
  if (peers > 1 && 2 * (out + 1) > peers) {
    spdlog::warn(
        "instance {}: failed a request ({}); not ejected: {} of {} instances of {} are out",
        inst.name(), reason, out, peers, inst.model());
    return;
  }
  ++inst.ejections;
  inst.on_trial = false;
  spdlog::warn("instance {}: ejected ({} in a row): {}", inst.name(), inst.ejections, reason);
  s.set_state(inst, InstanceState::ejected);
  s.watches[index]->wake.cancel();  // start re-probing after the ejection time
}

void Fleet::report_success(std::size_t index) {
  auto& inst = *state_->instances.at(index);
  if (inst.ejections == 0 && !inst.on_trial) return;
  if (inst.on_trial) spdlog::info("instance {}: served a request again; off trial", inst.name());
  inst.ejections = 0;
  inst.on_trial = false;
}

void Fleet::State::set_state(Instance& inst, InstanceState s) {
  if (inst.state == s) return;
  spdlog::info("instance {} ({}): {} -> {}", inst.name(), inst.model(), to_string(inst.state),
               to_string(s));
  inst.state = s;
  for (auto* t : watches[inst.index]->state_waits) t->cancel();
  if (on_change) on_change(inst);
}

awaitable<void> Fleet::State::nap(Watch& watch, std::chrono::milliseconds d) {
  if (watch.exit_status) co_return;  // the engine ended while we were busy: act now
  watch.wake.expires_after(d);
  co_await watch.wake.async_wait(use_tuple);
}

awaitable<void> Fleet::State::supervise(Instance& inst) {
  auto self = shared_from_this();
  auto& watch = *watches[inst.index];
  watch.supervising = true;
  struct Ends {
    Watch& w;
    ~Ends() { w.supervising = false; }
  } ends{watch};
  const auto& t = config.timeouts;
  const auto& h = config.health;
  http::UpstreamOptions traffic{t.connect, t.first_byte, t.stream_idle, 32};
  // Probes fail fast: a slow /health means "not ready".
  http::UpstreamOptions probing{1000ms, 2000ms, 2000ms, 1};

  if (inst.url) {
    // Started again (a profile switched back on): same port, same pool.
  } else if (inst.config.url) {
    auto url = http::parse_url(*inst.config.url);
    if (!url) {
      spdlog::error("instance {}: {}", inst.name(), url.error().message);
      set_state(inst, InstanceState::down);
      co_return;
    }
    inst.url = *url;
  } else {
    // One port for the instance's life, so restarts keep its URL and pool.
    auto port = free_port();
    if (!port) {
      spdlog::error("instance {}: {}", inst.name(), port.error().message);
      set_state(inst, InstanceState::down);
      co_return;
    }
    inst.url = http::Url{"127.0.0.1", *port, ""};
  }
  if (!inst.pool) inst.pool = std::make_unique<http::UpstreamPool>(executor, *inst.url, traffic);
  http::UpstreamPool probe(executor, *inst.url, probing);

  while (!done(inst)) {
    if (inst.config.command && !watch.process) {
      if (!co_await launch(inst, watch)) co_return;  // cannot start at all: down
    }
    if (!co_await wait_healthy(inst, watch)) continue;  // exited or timed out: restart
    if (done(inst)) break;
    // Whatever ran before may be a different process now: the router
    // forgets what it had cached.
    ++inst.generation;
    if (!inst.config.slots) {
      const Props props = co_await read_props(probe);
      inst.kv_tokens = props.slot_context * std::max(props.slots, 1);
      if (props.slots > 0) {
        inst.slots = props.slots;
      } else {
        spdlog::warn("instance {}: slots not set and /props has no total_slots; assuming 1",
                     inst.name());
      }
    }
    // A connection per slot stays open: with fewer, a busy instance would
    // connect and close on every request beyond the idle limit.
    inst.pool->set_max_idle(std::max<std::size_t>(traffic.max_idle, inst.slots));
    spdlog::info("instance {}: healthy at {}, {} slot(s)", inst.name(), inst.url->authority(),
                 inst.slots.get());
    set_state(inst, InstanceState::ready);

    // Watch: probe each interval; re-probe an ejected instance with backoff.
    auto backoff = h.backoff;
    while (!done(inst)) {
      const bool ejected = inst.state == InstanceState::ejected;
      co_await nap(watch, ejected ? backoff : h.interval);
      if (done(inst)) break;
      if (!ejected && inst.state == InstanceState::ejected) {  // report_failure() woke us
        // Longer for each ejection while its requests keep failing.
        backoff = h.backoff;
        for (int i = 1; i < inst.ejections; ++i) backoff = doubled(backoff, h.backoff_max);
        continue;
      }
      if (watch.exit_status) {
        co_await after_exit(inst, watch);
        break;
      }
      const bool ok = co_await healthy(probe);
      if (inst.state == InstanceState::ready && !ok) {
        spdlog::warn("instance {}: ejected: /health probe failed", inst.name());
        set_state(inst, InstanceState::ejected);
        backoff = h.backoff;
      } else if (inst.state == InstanceState::ejected) {
        if (ok) {
          // An instance that failed requests comes back on trial: /health
          // answering says little about how it serves.
          inst.on_trial = inst.ejections > 0;
          spdlog::info("instance {}: /health answers again; taking it back{}", inst.name(),
                       inst.on_trial ? " on trial (one request at a time)" : "");
          set_state(inst, InstanceState::ready);
        } else if (ejected) {
          backoff = doubled(backoff, h.backoff_max);
        }
      }
    }
  }
}

awaitable<bool> Fleet::State::launch(Instance& inst, Watch& watch) {
  const auto expand = [&](std::string text) {
    text = substitute(text, "${PORT}", std::to_string(inst.url->port));
    text = substitute(text, "${GPUS}", inst.config.gpus);
    return substitute(text, "${SWITCHYARD}", self_path);
  };
  // A llama-server that knows it has a router reports its load's progress
  // (common/router_child.h); the instance's own env may say otherwise.
  auto env = inst.config.env;
  env.try_emplace(kRouterPortVariable, config.listen.substr(config.listen.rfind(':') + 1));
  // Without shell syntax the engine is exec'd directly: it is then the
  // process the gateway waits for and that gets SIGTERM if the gateway dies
  // (a shell in between would not pass that on). Words are split before
  // substitution, so a path with spaces stays one argument.
  std::string command;
  Result<ChildProcess> child = Error{""};
  if (auto words =
          split_plain_command(*inst.config.command, {"${PORT}", "${GPUS}", "${SWITCHYARD}"})) {
    for (auto& w : *words) {
      w = expand(w);
      command += (command.empty() ? "" : " ") + w;
    }
    child = ChildProcess::spawn(*words, env);
  } else {
    command = expand(*inst.config.command);
    child = ChildProcess::spawn_shell(command, env);
  }
  if (!child) {
    spdlog::error("instance {}: {}", inst.name(), child.error().message);
    inst.problem = child.error().message;
    set_state(inst, InstanceState::down);
    co_return false;
  }
  spdlog::info("instance {}: started pid {}: {}", inst.name(), child->pid(), command);
  net::co_spawn(executor, relay_output(inst.index, child->release_output_fd()), net::detached);
  watch.exit_status.reset();
  reaper->on_exit(child->pid(), [this, &watch](int status) {
    watch.exit_status = status;
    watch.wake.cancel();
  });
  watch.process = std::move(*child);
  co_return true;
}

awaitable<bool> Fleet::State::wait_healthy(Instance& inst, Watch& watch) {
  http::UpstreamPool probe(executor, *inst.url, http::UpstreamOptions{1000ms, 2000ms, 2000ms, 1});
  const auto deadline = clock_type::now() + config.timeouts.startup;
  auto backoff = config.health.backoff;
  for (;;) {
    if (done(inst)) co_return false;
    if (watch.exit_status) {
      co_await after_exit(inst, watch);
      co_return false;
    }
    if (co_await healthy(probe)) co_return true;
    if (watch.process && clock_type::now() > deadline) {
      spdlog::error(
          "instance {}: not healthy within timeouts.startup ({} s); restarting it", inst.name(),
          std::chrono::duration_cast<std::chrono::seconds>(config.timeouts.startup).count());
      inst.problem = "not healthy within timeouts.startup";
      watch.process->signal(SIGKILL);
      continue;  // reaped above on the next turn, then restarted with backoff
    }
    // An external engine may be down for long: back off; a starting one is
    // polled briskly.
    co_await nap(watch, watch.process ? 100ms : backoff);
    if (!watch.process) backoff = doubled(backoff, config.health.backoff_max);
  }
}

awaitable<void> Fleet::State::after_exit(Instance& inst, Watch& watch) {
  const int status = *watch.exit_status;
  inst.problem = "engine " + describe_exit(status);
  inst.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  inst.engine_sleep = Instance::EngineSleep::awake;
  // Whatever the shell left behind; the reaper waits for it (it is our
  // child now, the gateway being a subreaper).
  watch.process->signal(SIGKILL);
  watch.process.reset();
  watch.exit_status.reset();
  if (done(inst)) co_return;
  ++inst.restarts;
  const auto now = clock_type::now();
  watch.crashes = now - watch.last_crash < config.health.crash_window ? watch.crashes + 1 : 1;
  watch.last_crash = now;
  const bool looping = watch.crashes >= config.health.crash_loop;
  auto delay = config.health.backoff;
  for (int i = 1; i < watch.crashes; ++i) delay = doubled(delay, config.health.backoff_max);
  if (looping) delay = config.health.backoff_max;
  spdlog::error("instance {}: engine {}; restart {} in {} ms{}", inst.name(), describe_exit(status),
                watch.crashes, delay.count(),
                looping ? " (crash-looping: kept out of routing)" : "");
  set_state(inst, looping ? InstanceState::crash_looping : InstanceState::restarting);
  co_await nap(watch, delay);
}

awaitable<bool> Fleet::State::healthy(http::UpstreamPool& probe) {
  http::UpstreamCall call(probe);
  http::UpstreamRequest req;
  req.method = "GET";
  req.target = "/health";
  auto head = co_await call.send(req);
  if (!head) co_return false;
  auto body = co_await call.read_all(64 * 1024);
  co_return body && head->status == 200;
}

awaitable<Fleet::State::Props> Fleet::State::read_props(http::UpstreamPool& probe) {
  Props props;
  http::UpstreamCall call(probe);
  http::UpstreamRequest req;
  req.method = "GET";
  req.target = "/props";
  auto head = co_await call.send(req);
  if (!head || head->status != 200) co_return props;
  auto body = co_await call.read_all(1 << 20);
  if (!body) co_return props;
  boost::system::error_code ec;
  auto doc = boost::json::parse(*body, ec);
  if (ec || !doc.is_object()) co_return props;
  const auto positive = [](const boost::json::value* v) {
    return v && v->is_int64() && v->get_int64() > 0 ? v->get_int64() : 0;
  };
  props.slots = static_cast<int>(
      std::min<std::int64_t>(positive(doc.get_object().if_contains("total_slots")), 1 << 20));
  if (const auto* settings = doc.get_object().if_contains("default_generation_settings");
      settings && settings->is_object())
    props.slot_context = static_cast<long>(positive(settings->get_object().if_contains("n_ctx")));
  co_return props;
}

awaitable<void> Fleet::State::relay_output(std::size_t index, int fd) {
  auto self = shared_from_this();
  auto& inst = *instances.at(index);
  net::posix::stream_descriptor pipe(executor, fd);
  std::string pending;
  char buf[4096];
  for (;;) {
    auto [ec, n] = co_await pipe.async_read_some(net::buffer(buf), use_tuple);
    if (ec) break;
    pending.append(buf, n);
    for (std::size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      output_line(inst, std::string_view(pending).substr(0, eol));
      pending.erase(0, eol + 1);
    }
  }
  if (!pending.empty()) output_line(inst, pending);
}

// A line of an engine's output: logged, unless it is a state report, which
// goes to its subscriber (a load reports every 200 ms or so).
void Fleet::State::output_line(Instance& inst, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto report = parse_engine_state(line);
  if (!report) {
    spdlog::info("[{}] {}", inst.name(), line);
    return;
  }
  spdlog::debug("[{}] {}", inst.name(), line);
  using Sleep = Instance::EngineSleep;
  if (report->state == "sleeping" && inst.engine_sleep == Sleep::awake) {
    inst.engine_sleep = Sleep::asleep;
    ++inst.generation;  // what it had cached is gone
  }
  if (report->state == "loading" && inst.engine_sleep != Sleep::awake)
    inst.engine_sleep = Sleep::waking;
  // It serves: probe it now rather than at the end of the nap.
  if (report->state == "ready") {
    inst.engine_sleep = Sleep::awake;
    watches[inst.index]->wake.cancel();
  }
  if (on_engine_state) on_engine_state(inst, *report);
}

void Fleet::set_cause(std::size_t index, AdminCause cause, bool on) {
  auto& inst = *state_->instances.at(index);
  const auto before = inst.admin();
  if (!inst.causes.set(cause, on)) return;
  spdlog::info("instance {} ({}): {} {}: admin {} -> {}{}{}", inst.name(), inst.model(),
               on ? "+" : "-", to_string(cause), to_string(before), to_string(inst.admin()),
               inst.causes.empty() ? "" : " for ", inst.causes.describe());
  if (state_->on_change) state_->on_change(inst);
}

// The status of a call to the engine, or 0 when it could not be made.
awaitable<int> Fleet::State::call(Instance& inst, std::string method, std::string target,
                                  std::string body, std::chrono::milliseconds timeout) {
  auto self = shared_from_this();
  if (!inst.url) co_return 0;
  http::UpstreamPool pool(executor, *inst.url,
                          http::UpstreamOptions{config.timeouts.connect, timeout, timeout, 1});
  http::UpstreamCall c(pool);
  http::UpstreamRequest req;
  req.method = std::move(method);
  req.target = std::move(target);
  req.body = body;
  if (!body.empty()) req.headers.add("Content-Type", "application/json");
  if (inst.config.api_key) req.headers.add("Authorization", "Bearer " + *inst.config.api_key);
  auto head = co_await c.send(req);
  if (!head) co_return 0;
  auto rest = co_await c.read_all(1 << 20);
  co_return rest ? head->status : 0;
}

awaitable<std::optional<std::string>> Fleet::bring_up(std::size_t index) {
  auto s = state_;
  auto& inst = *s->instances.at(index);
  auto& watch = *s->watches.at(index);
  const auto startup = s->config.timeouts.startup;
  inst.problem.clear();
  inst.exit_code.reset();
  if (inst.asleep) {
    const int status = co_await s->call(inst, "POST", "/wake_up", "", startup);
    if (status != 200)
      co_return status ? fmt::format("POST /wake_up answered {}", status)
                       : std::string("POST /wake_up failed: the engine did not answer");
    inst.asleep = false;
    spdlog::info("instance {}: awake", inst.name());
    co_return std::nullopt;
  }
  net::steady_timer tick(s->executor);
  // A supervisor of the last run may not have seen its halt yet.
  while (watch.supervising) {
    tick.expires_after(10ms);
    co_await tick.async_wait(use_tuple);
  }
  watch.halted = false;
  watch.crashes = 0;
  inst.ejections = 0;
  inst.on_trial = false;
  s->set_state(inst, InstanceState::starting);
  net::co_spawn(s->executor, s->supervise(inst), net::detached);
  const auto deadline = clock_type::now() + startup;
  // Woken when its state changes (the second is a bound, not a poll).
  const ScopedMember waiting(watch.state_waits, &tick);
  for (;;) {
    if (inst.state == InstanceState::ready) co_return std::nullopt;
    if (inst.state == InstanceState::restarting || inst.state == InstanceState::crash_looping ||
        inst.state == InstanceState::down)
      co_return inst.problem.empty() ? std::string("the engine did not start") : inst.problem;
    if (s->stopping) co_return std::string("the gateway is shutting down");
    if (clock_type::now() > deadline) co_return std::string("not healthy within timeouts.startup");
    tick.expires_after(1s);
    co_await tick.async_wait(use_tuple);
  }
}

awaitable<void> Fleet::bring_down(std::size_t index) {
  auto s = state_;
  auto& inst = *s->instances.at(index);
  if (inst.config.sleep && !inst.asleep && inst.state == InstanceState::ready) {
    const int status =
        co_await s->call(inst, "POST", "/sleep?level=1", "", s->config.timeouts.startup);
    if (status == 200) {
      inst.asleep = true;
      spdlog::info("instance {}: asleep (POST /sleep?level=1)", inst.name());
      co_return;
    }
    spdlog::warn("instance {}: POST /sleep?level=1 answered {}; stopping it instead", inst.name(),
                 status);
  }
  if (inst.asleep) co_return;
  s->watches[index]->halted = true;
  std::vector<std::size_t> one{index};
  co_await s->stop_processes(std::move(one));
  if (inst.config.command) s->set_state(inst, InstanceState::stopped);
}

awaitable<std::optional<std::string>> Fleet::warm(std::size_t index) {
  auto s = state_;
  auto& inst = *s->instances.at(index);
  boost::json::object body{
      {"model", inst.served_model()}, {"prompt", "warm up"}, {"max_tokens", 1}};
  const int status = co_await s->call(inst, "POST", "/v1/completions", boost::json::serialize(body),
                                      s->config.timeouts.first_byte);
  if (status == 200) co_return std::nullopt;
  co_return status ? fmt::format("the warm-up request answered {}", status)
                   : std::string("the warm-up request failed: the engine did not answer");
}

awaitable<void> Fleet::stop() {
  auto s = state_;
  s->stopping = true;
  std::vector<std::size_t> all(s->instances.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  co_await s->stop_processes(all);
  for (auto& inst : s->instances) s->set_state(*inst, InstanceState::stopped);
}

awaitable<void> Fleet::State::stop_processes(std::vector<std::size_t> indices) {
  auto self = shared_from_this();
  for (auto i : indices) {
    watches[i]->wake.cancel();
    if (!watches[i]->process) continue;
    // A llama-server told it has a router stops only once its stdin says so.
    watches[i]->process->tell(std::string(kRouterExitCommand) + "\n");
    watches[i]->process->signal(SIGTERM);
  }
  const auto deadline = clock_type::now() + config.timeouts.stop;
  bool killed = false;
  net::steady_timer wait(executor);
  const ScopedMember waiting(stop_waits, &wait);
  for (;;) {
    reaper->reap();  // a zombie of the group still counts for kill()
    bool running = false;
    for (auto i : indices) {
      auto& w = *watches[i];
      if (!w.process) continue;
      if (w.process->group_alive()) {
        running = true;
        continue;
      }
      spdlog::info("instance {}: engine stopped{}", instances[i]->name(),
                   killed ? " (killed after timeouts.stop)" : "");
      w.process.reset();
    }
    if (!running) break;
    if (!killed && clock_type::now() >= deadline) {
      spdlog::warn("engines still running after timeouts.stop: sending SIGKILL");
      for (auto i : indices)
        if (watches[i]->process) watches[i]->process->signal(SIGKILL);
      killed = true;
    }
    // Woken when a child is reaped (the last process of a group to end is
    // always one of ours, the gateway being a subreaper), else at the deadline.
    wait.expires_at(killed ? clock_type::now() + config.timeouts.stop : deadline);
    co_await wait.async_wait(use_tuple);
  }
}

}  // namespace switchyard::fleet
