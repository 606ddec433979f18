#include "profiles/model_residency.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "http/use_tuple.h"
#include "profiles/swap_order.h"

namespace switchyard::profiles {

namespace net = boost::asio;
using net::awaitable;
using namespace std::chrono_literals;
using fleet::AdminCause;
using fleet::InstanceState;
using http::use_tuple;

const char* to_string(ResidencyEvent::Kind kind) {
  switch (kind) {
    case ResidencyEvent::Kind::loading:
      return "loading";
    case ResidencyEvent::Kind::loaded:
      return "loaded";
    case ResidencyEvent::Kind::unloaded:
      return "unloaded";
    case ResidencyEvent::Kind::failed:
      return "failed";
  }
  return "unknown";
}

namespace {

double seconds_between(steady_time from, steady_time to) {
  return std::chrono::duration<double>(to - from).count();
}

// How long a request counts toward its model's demand (1/e of it after this).
constexpr double kDemandSeconds = 60;
// Requests of two models this close arrived together (an agent's parallel
// calls leave within a millisecond or two of each other).
constexpr auto kTogether = std::chrono::milliseconds(20);

double decayed(double value, steady_time at, steady_time now) {
  return value * std::exp(-seconds_between(at, now) / kDemandSeconds);
}

// What a model's instances add up to: loaded before loading before sleeping.
struct Presence {
  bool loaded = false, loading = false, sleeping = false;

  // An engine that holds its memory; one that put itself to sleep shows so,
  // and its wake as a load.
  void engine(const fleet::Instance& in) {
    using Sleep = fleet::Instance::EngineSleep;
    loaded |= in.engine_sleep == Sleep::awake;
    loading |= in.engine_sleep == Sleep::waking;
    sleeping |= in.engine_sleep == Sleep::asleep;
  }
  void always_on(const fleet::Instance& in) {
    const bool parked = in.admin() == fleet::AdminState::parked;
    if (in.state == InstanceState::ready && !in.asleep && !parked) engine(in);
    loading |= in.state == InstanceState::starting && !parked;
    sleeping |= in.asleep;
  }
  std::string value() const {
    return loaded ? "loaded" : loading ? "loading" : sleeping ? "sleeping" : "unloaded";
  }
};

}  // namespace

ModelState always_on_state(const std::string& model,
                           const std::vector<std::unique_ptr<fleet::Instance>>& instances) {
  Presence presence;
  for (const auto& in : instances)
    if (in->model() == model) presence.always_on(*in);
  return ModelState{model, presence.value(), false, "", std::nullopt};
}

struct ModelResidency::Impl : std::enable_shared_from_this<Impl> {
  // An on-demand instance's residency.
  struct Track {
    enum class Phase { unloaded, loading, loaded, unloading } phase = Phase::unloaded;
    steady_time since{};                 // of the phase
    steady_time last_used{};             // a request started or ended on it
    std::optional<double> load_seconds;  // the last load's, measured
    bool victim = false;                 // a load waits for it to go
    bool failed = false;                 // its last load failed
    double demand = 0;                   // its model's requests, decayed (kDemandSeconds)
    steady_time demand_at{};
  };
  // A load under way: its victims drain and go, then it starts.
  struct Load {
    std::string model;
    std::size_t target = 0;
    std::vector<std::size_t> victims;
    std::string reason;
    bool cancelled = false;
    bool starting = false;  // past the drain: no longer cancelled
  };
  struct Waiter {
    std::string model;
    steady_time since;
  };

  Impl(net::any_io_executor ex, const config::FleetConfig& c, ResidencyEnv& e, Clock clk)
      : executor(ex),
        env(e),
        clock(std::move(clk)),
        steps(ex, e, {AdminCause::model_evicting, AdminCause::model_unloaded}),
        tick(ex) {
    configure(c);
  }
  // Takes `c`'s cards, swapping options and memory figures, and logs the
  // figure each instance is weighed by.
  void configure(const config::FleetConfig& c);

  const fleet::Instance& inst(std::size_t i) const { return *env.instances().at(i); }
  // A copy a reload replaced or removed is neither: it finishes its
  // requests and stops (fleet::AdminCause::reload_removing).
  bool on_demand(const fleet::Instance& in) const {
    return in.config.load == config::LoadMode::on_demand && !retired(in);
  }
  static bool retired(const fleet::Instance& in) {
    return in.causes.has(AdminCause::reload_removing);
  }
  Track& track(std::size_t i) { return tracks[i]; }
  std::optional<std::uint64_t> memory_of(const fleet::Instance& in) const;
  bool present(const fleet::Instance& in) const;
  std::vector<Resident> residents() const;
  int waiters_of(const std::string& model) const;
  std::vector<ModelWait> waits() const;
  std::optional<std::string> try_load(const ModelWait& want, const std::string& reason,
                                      bool forced);
  // The model's instance whose room is cheapest to make among `all`, with
  // what must go for it.
  std::optional<std::pair<std::size_t, std::vector<std::size_t>>> cheapest_room(
      const std::vector<Resident>& all, const std::string& model) const;
  // batch: keeps idle models worth more (asked for apart from `want`'s, in
  // more demand) than one that could make the room once its work is done
  // (docs/models.md, "Scheduling"); whether the load must wait for that.
  bool keep_what_comes_next(std::vector<Resident>& all, const ModelWait& want) const;
  // Whether the two models' requests mostly arrive together (kTogether):
  // an agent's parallel calls, needed in the same phase of its turn.
  bool together(const std::string& a, const std::string& b) const;
  // Notes a request's arrival for its demand and for together().
  void arrived(const std::string& model, steady_time now);
  // Loads `target`'s instance after its victims have gone.
  void start(std::size_t target, std::vector<std::size_t> victims, std::string reason);
  awaitable<void> run(std::shared_ptr<Load> load);
  awaitable<void> unload(std::vector<std::size_t> indices, std::string reason);
  void expire_ttl();
  void cancel_abandoned();
  void step();
  double expected_load_seconds(const std::string& model) const;
  ModelState state_of(const std::string& model) const;
  void emit(ResidencyEvent::Kind kind, std::size_t i, std::string reason, double seconds = 0);
  void wake() { steps.notify(); }
  awaitable<void> ticking();

  net::any_io_executor executor;
  config::FleetConfig config;
  ResidencyEnv& env;
  Clock clock;
  GpuMemory gpus;
  std::map<std::size_t, Track> tracks;  // by instance index, on-demand ones
  std::map<const void*, Waiter> waiting;
  std::map<std::string, steady_time> last_arrival;  // by model
  // Requests of two models (the pair in order) that arrived together, decayed.
  std::map<std::pair<std::string, std::string>, std::pair<double, steady_time>> pairs;
  std::vector<std::shared_ptr<Load>> loads;
  Transition steps;  // its drains are cut short by used() and step()
  net::steady_timer tick;
  std::function<void(const ResidencyEvent&)> on_event;
};

std::optional<std::uint64_t> ModelResidency::Impl::memory_of(const fleet::Instance& in) const {
  if (in.config.memory) return in.config.memory;
  if (auto it = config.memory_estimates.find(in.name()); it != config.memory_estimates.end())
    return it->second.per_gpu;
  return std::nullopt;
}

// Whether it holds its GPUs' memory now (or is about to).
bool ModelResidency::Impl::present(const fleet::Instance& in) const {
  if (on_demand(in)) {
    auto it = tracks.find(in.index);
    return it != tracks.end() && it->second.phase != Track::Phase::unloaded;
  }
  if (in.asleep) return false;
  // A retired copy's engine holds its memory until it has stopped.
  if (retired(in)) return in.state == InstanceState::removed;
  return in.admin() != fleet::AdminState::parked && in.state != InstanceState::stopped &&
         in.state != InstanceState::down;
}

std::vector<Resident> ModelResidency::Impl::residents() const {
  std::vector<Resident> out;
  const auto now = clock();
  for (const auto& in : env.instances()) {
    Resident r;
    r.index = in->index;
    r.gpus = in->config.gpu_ids();
    r.memory = memory_of(*in);
    r.present = present(*in);
    if (auto it = tracks.find(in->index); it != tracks.end() && on_demand(*in)) {
      const auto& t = it->second;
      r.busy = env.in_flight(in->index) > 0 || waiters_of(in->model()) > 0;
      r.evictable = t.phase == Track::Phase::loaded && !t.victim;
      r.reload_seconds = t.load_seconds.value_or(
          std::chrono::duration<double>(config.switching.switch_cost).count());
      r.idle_seconds = seconds_between(std::max(t.last_used, t.since), now);
      r.demand = decayed(t.demand, t.demand_at, now);
    }
    out.push_back(std::move(r));
  }
  return out;
}

int ModelResidency::Impl::waiters_of(const std::string& model) const {
  int n = 0;
  for (const auto& [id, w] : waiting) n += w.model == model;
  return n;
}

// The models with requests waiting and nothing loaded or on its way.
std::vector<ModelWait> ModelResidency::Impl::waits() const {
  std::map<std::string, ModelWait> by_model;
  const auto now = clock();
  for (const auto& [id, w] : waiting) {
    auto& m = by_model[w.model];
    m.model = w.model;
    ++m.waiting;
    m.oldest_wait = std::max(m.oldest_wait, seconds_between(w.since, now));
  }
  std::vector<ModelWait> out;
  for (auto& [model, m] : by_model) {
    bool served = false;
    for (const auto& in : env.instances())
      if (in->model() == model && (present(*in) || (!on_demand(*in) && in->routable())))
        served = true;
    if (served) continue;
    bool managed = false;
    for (const auto& in : env.instances()) managed |= in->model() == model && on_demand(*in);
    if (!managed) continue;
    out.push_back(m);
  }
  return out;
}

void ModelResidency::Impl::emit(ResidencyEvent::Kind kind, std::size_t i, std::string reason,
                                double seconds) {
  const auto& in = inst(i);
  spdlog::info("model {}: {} on {} ({}{})", in.model(), to_string(kind), in.name(), reason,
               seconds > 0 ? fmt::format(", {:.1f} s", seconds) : "");
  if (on_event) on_event({kind, in.model(), in.name(), std::move(reason), seconds});
}

std::optional<std::pair<std::size_t, std::vector<std::size_t>>> ModelResidency::Impl::cheapest_room(
    const std::vector<Resident>& all, const std::string& model) const {
  std::optional<std::pair<std::size_t, std::vector<std::size_t>>> best;
  std::tuple<int, double> best_key{};
  for (const auto& in : env.instances()) {
    if (in->model() != model || !on_demand(*in) || present(*in)) continue;
    auto victims = choose_evictions(all, all.at(in->index), gpus);
    if (!victims) continue;
    std::tuple<int, double> key{0, 0.0};
    for (auto v : *victims) {
      std::get<0>(key) += all.at(v).busy;
      std::get<1>(key) += eviction_cost(all.at(v));
    }
    if (!best || key < best_key) {
      best.emplace(in->index, std::move(*victims));
      best_key = key;
    }
  }
  return best;
}

// Agents call their models in phases (an orchestrator, then its workers in
// parallel, then the orchestrator again): where two of three fit,
// unloading whichever is idle at the moment reloads all three every turn,
// while unloading the wanted model's fellow worker and keeping the
// orchestrator reloads one.
bool ModelResidency::Impl::keep_what_comes_next(std::vector<Resident>& all,
                                                const ModelWait& want) const {
  if (config.swapping.policy != config::SwappingOptions::Policy::batch ||
      aged(want, config.swapping.max_wait))
    return false;
  // Those that could go once their work is done (loading, or busy).
  auto later = all;
  for (auto& r : later)
    if (const auto it = tracks.find(r.index); it != tracks.end() && !it->second.victim)
      r.evictable |= it->second.phase == Track::Phase::loading ||
                     (it->second.phase == Track::Phase::loaded && r.busy);
  // What keeping each is worth: first whether it is asked for apart from
  // the wanted model (one asked for with it is needed in the same phase,
  // so it goes first), then its demand. The least among those on the cards
  // the model could load on goes.
  const auto worth = [&](const Resident& r) {
    return std::make_pair(!together(want.model, inst(r.index).model()), r.demand);
  };
  std::set<std::string> cards;
  for (const auto& in : env.instances())
    if (in->model() == want.model && on_demand(*in))
      for (const auto& g : in->config.gpu_ids()) cards.insert(g);
  std::optional<std::pair<bool, double>> least;
  for (const auto& r : later)
    if (r.evictable && std::any_of(r.gpus.begin(), r.gpus.end(),
                                   [&](const std::string& g) { return cards.count(g) > 0; }))
      if (!least || worth(r) < *least) least = worth(r);
  if (!least) return false;
  auto kept = all;
  bool any = false;
  for (auto& r : kept)
    if (r.evictable && worth(r) > *least) {
      r.evictable = false;
      any = true;
    }
  if (!any) return false;
  if (cheapest_room(kept, want.model)) {
    all = std::move(kept);
    return false;
  }
  for (auto& r : later)
    if (worth(r) > *least) r.evictable = false;
  return cheapest_room(later, want.model).has_value();
}

// Chooses the model's instance whose room is cheapest to make, marks what
// must go and starts the load; why not when no room can be made now.
std::optional<std::string> ModelResidency::Impl::try_load(const ModelWait& want,
                                                          const std::string& reason, bool forced) {
  auto all = residents();
  const auto now = clock();
  // A model with work stays unless this load may take its place.
  for (auto& r : all) {
    if (!r.evictable || !r.busy || forced) continue;
    const auto& t = tracks.at(r.index);
    r.evictable = may_preempt(want, seconds_between(t.since, now), config.swapping);
  }
  if (!forced && keep_what_comes_next(all, want))
    return fmt::format("'{}' waits for a model in less demand to finish its work", want.model);
  auto best = cheapest_room(all, want.model);
  if (!best)
    return fmt::format(
        "no room for '{}' now: every instance that would have to be unloaded is "
        "always-on, loading, or busy within swapping.min_resident",
        want.model);
  start(best->first, std::move(best->second), reason);
  return std::nullopt;
}

void ModelResidency::Impl::start(std::size_t target, std::vector<std::size_t> victims,
                                 std::string reason) {
  auto load = std::make_shared<Load>();
  load->model = inst(target).model();
  load->target = target;
  load->victims = std::move(victims);
  load->reason = std::move(reason);
  const auto now = clock();
  for (auto v : load->victims) {
    track(v).victim = true;
    // Nothing new for it from now on; what it runs finishes.
    env.set_cause(v, AdminCause::model_evicting, true);
  }
  auto& t = track(load->target);
  t.phase = Track::Phase::loading;
  t.since = now;
  t.failed = false;
  std::string names;
  for (auto v : load->victims) names += (names.empty() ? "" : ", ") + inst(v).name();
  spdlog::info("model {}: loading {} ({}){}", load->model, inst(load->target).name(), load->reason,
               names.empty() ? "" : "; unloading " + names + " first");
  emit(ResidencyEvent::Kind::loading, load->target, load->reason);
  loads.push_back(load);
  net::co_spawn(executor, run(std::move(load)), net::detached);
}

awaitable<void> ModelResidency::Impl::run(std::shared_ptr<Load> load) {
  auto self = shared_from_this();
  const auto what = "model " + load->model;
  // Cancelled while draining: every waiter left and another model waits.
  // A named function, not a temporary in co_await (GCC 12 destroys those twice).
  std::function<bool()> cancelled = [load] { return load->cancelled; };
  const bool drained = co_await steps.drain(load->victims, config.switching, what, cancelled);
  if (!drained) {
    for (auto v : load->victims) {
      track(v).victim = false;
      env.set_cause(v, AdminCause::model_evicting, false);
    }
    auto& t = track(load->target);
    t.phase = Track::Phase::unloaded;
    t.since = clock();
    emit(ResidencyEvent::Kind::unloaded, load->target, "cancelled");
  } else {
    load->starting = true;
    co_await unload(load->victims, "evicted");
    const auto i = load->target;
    std::vector<std::size_t> one{i};  // not a braced list in co_await (GCC 12)
    env.set_cause(i, AdminCause::model_unloaded, false);
    const auto began = clock();
    const auto why = (co_await steps.start(one)).front();
    auto& t = track(i);
    t.since = clock();
    t.last_used = t.since;
    if (why) {
      co_await steps.stop(one);
      t.phase = Track::Phase::unloaded;
      t.failed = true;
      // Its waiters are answered now (the event's listener refuses them);
      // the next request tries again.
      std::erase_if(waiting, [&](const auto& w) { return w.second.model == load->model; });
      emit(ResidencyEvent::Kind::failed, i, *why);
    } else {
      t.phase = Track::Phase::loaded;
      t.load_seconds = seconds_between(began, t.since);
      emit(ResidencyEvent::Kind::loaded, i, load->reason, *t.load_seconds);
    }
  }
  loads.erase(std::remove(loads.begin(), loads.end(), load), loads.end());
  if (load->cancelled || drained) wake();
}

// Drains the ones among `indices` still loaded (they take nothing new), then
// stops them all at once.
awaitable<void> ModelResidency::Impl::unload(std::vector<std::size_t> indices, std::string reason) {
  auto self = shared_from_this();
  std::erase_if(indices, [&](std::size_t i) { return track(i).phase == Track::Phase::unloaded; });
  std::string what = "unloading";
  for (auto i : indices) {
    track(i).phase = Track::Phase::unloading;
    track(i).since = clock();
    env.set_cause(i, AdminCause::model_evicting, true);
    what += " " + inst(i).name();
  }
  co_await steps.drain(indices, config.switching, what);
  co_await steps.stop(indices);
  for (auto i : indices) {
    auto& t = track(i);
    t.phase = Track::Phase::unloaded;
    t.victim = false;
    t.since = clock();
    emit(ResidencyEvent::Kind::unloaded, i, reason);
  }
}

// Loaded instances with a ttl and nothing in flight or waiting for that long go.
void ModelResidency::Impl::expire_ttl() {
  const auto now = clock();
  for (auto& [i, t] : tracks) {
    const auto& in = inst(i);
    if (t.phase != Track::Phase::loaded || t.victim || !in.config.ttl || !on_demand(in)) continue;
    if (env.in_flight(i) > 0 || waiters_of(in.model()) > 0) continue;
    if (now - std::max(t.last_used, t.since) < *in.config.ttl) continue;
    t.phase = Track::Phase::unloading;  // at once, so the next step does not pick it again
    net::co_spawn(executor, unload({i}, "ttl"), net::detached);
  }
}

// A load still draining its victims whose every waiter has left is dropped
// when another model waits: the cards go to that one instead.
void ModelResidency::Impl::cancel_abandoned() {
  for (auto& load : loads) {
    if (load->starting || load->cancelled || load->reason != "request") continue;
    if (waiters_of(load->model) > 0) continue;
    bool others = false;
    for (const auto& [id, w] : waiting) others |= w.model != load->model;
    if (!others) continue;
    spdlog::info("model {}: load cancelled: every request for it left and another model waits",
                 load->model);
    load->cancelled = true;
  }
  wake();
}

awaitable<void> ModelResidency::Impl::ticking() {
  auto self = shared_from_this();
  for (;;) {
    tick.expires_after(250ms);
    auto [ec] = co_await tick.async_wait(use_tuple);
    if (ec) co_return;
    step();
  }
}

void ModelResidency::Impl::step() {
  expire_ttl();
  cancel_abandoned();
  auto pending = waits();
  for (auto& w : pending) w.load_seconds = expected_load_seconds(w.model);
  for (const auto& model : swap_order(pending, config.swapping)) {
    const auto it = std::find_if(pending.begin(), pending.end(),
                                 [&](const ModelWait& w) { return w.model == model; });
    try_load(*it, "request", false);
  }
}

double ModelResidency::Impl::expected_load_seconds(const std::string& model) const {
  double longest = 0;
  bool measured = false;
  for (const auto& [i, t] : tracks)
    if (inst(i).model() == model && t.load_seconds) {
      longest = std::max(longest, *t.load_seconds);
      measured = true;
    }
  return measured ? longest : std::chrono::duration<double>(config.switching.switch_cost).count();
}

void ModelResidency::Impl::configure(const config::FleetConfig& c) {
  config = c;
  gpus.clear();
  for (const auto& g : c.gpus) gpus[g.id] = g.memory;
  for (const auto& in : env.instances()) {
    if (retired(*in) || (in->config.gpus.empty() && in->config.load != config::LoadMode::on_demand))
      continue;
    const auto memory = memory_of(*in);
    std::string source = "unknown: never loaded beside an instance sharing one of its GPUs";
    if (in->config.memory)
      source = "its 'memory'";
    else if (auto it = c.memory_estimates.find(in->name()); it != c.memory_estimates.end())
      source = it->second.source;
    spdlog::info("instance {}: memory per GPU {} ({})", in->name(),
                 memory ? fmt::format("{:.2f} GiB", *memory / 1073741824.0) : "?", source);
  }
  if (c.gpus.empty())
    spdlog::info(
        "models: no 'gpus' declared: instances that share a GPU are never loaded together");
}

ModelResidency::ModelResidency(net::any_io_executor executor, const config::FleetConfig& config,
                               ResidencyEnv& env, Clock clock)
    : impl_(std::make_shared<Impl>(executor, config, env, std::move(clock))) {
  net::co_spawn(executor, impl_->ticking(), net::detached);
}

void ModelResidency::reload(const config::FleetConfig& config) {
  impl_->configure(config);
  impl_->step();  // more room, or a shorter max_wait, may start a load now
}

ModelResidency::~ModelResidency() {
  impl_->tick.cancel();
  for (auto& load : impl_->loads) load->cancelled = true;
  impl_->wake();
}

bool ModelResidency::manages(const std::string& model) const {
  for (const auto& in : impl_->env.instances())
    if (in->model() == model && impl_->on_demand(*in)) return true;
  return false;
}

bool ModelResidency::routable(const std::string& model) const {
  for (const auto& in : impl_->env.instances())
    if (in->model() == model && in->routable()) return true;
  return false;
}

void ModelResidency::Impl::arrived(const std::string& model, steady_time now) {
  for (const auto& in : env.instances())
    if (in->model() == model && on_demand(*in)) {
      auto& t = track(in->index);
      t.demand = 1 + decayed(t.demand, t.demand_at, now);
      t.demand_at = now;
    }
  for (const auto& [other, at] : last_arrival) {
    if (other == model || now - at > kTogether) continue;
    auto& [count, counted_at] = pairs[std::minmax(model, other)];
    count = 1 + decayed(count, counted_at, now);
    counted_at = now;
  }
  last_arrival[model] = now;
}

bool ModelResidency::Impl::together(const std::string& a, const std::string& b) const {
  const auto it = pairs.find(std::minmax(a, b));
  if (a == b || it == pairs.end()) return false;
  const auto now = clock();
  double fewer = std::numeric_limits<double>::infinity();
  for (const auto& [i, t] : tracks)
    if (inst(i).model() == a || inst(i).model() == b)
      fewer = std::min(fewer, decayed(t.demand, t.demand_at, now));
  // Half the requests of the one asked for less came with the other's.
  return decayed(it->second.first, it->second.second, now) * 2 >= fewer;
}

void ModelResidency::waiting(const void* request, const std::string& model) {
  const auto now = impl_->clock();
  impl_->waiting[request] = {model, now};
  impl_->arrived(model, now);
  impl_->step();
}

void ModelResidency::left(const void* request) {
  if (impl_->waiting.erase(request)) impl_->cancel_abandoned();
}

void ModelResidency::used(std::size_t index) {
  if (auto it = impl_->tracks.find(index); it != impl_->tracks.end())
    it->second.last_used = impl_->clock();
  impl_->wake();
  // A load waiting for this one's work to end may go now, not at the tick.
  if (!impl_->waiting.empty()) impl_->step();
}

std::optional<std::string> ModelResidency::load(const std::string& model) {
  if (!manages(model)) return fmt::format("'{}' has no load: on-demand instance to load", model);
  for (const auto& in : impl_->env.instances())
    if (in->model() == model && impl_->on_demand(*in) && impl_->present(*in))
      return fmt::format("model '{}' is already running", model);
  const ModelWait want{model, 0, 0, impl_->expected_load_seconds(model)};
  return impl_->try_load(want, "admin", /*forced=*/true);
}

std::optional<std::string> ModelResidency::unload(const std::string& model) {
  bool any = false;
  for (auto& [i, t] : impl_->tracks) {
    const auto& in = impl_->inst(i);
    if (in.model() != model || t.phase != Impl::Track::Phase::loaded || t.victim) continue;
    any = true;
    t.phase = Impl::Track::Phase::unloading;
    net::co_spawn(impl_->executor, impl_->unload({i}, "admin"), net::detached);
  }
  if (!any) return fmt::format("model '{}' is not running", model);
  return std::nullopt;
}

void ModelResidency::step() {
  impl_->step();
}

void ModelResidency::prestart() {
  auto& g = *impl_;
  for (const auto& in : g.env.instances()) {
    if (!in->config.prestart || !g.on_demand(*in) || g.present(*in)) continue;
    const auto all = g.residents();
    if (!fits(all, all.at(in->index), g.gpus)) {
      spdlog::warn(
          "instance {}: prestart: not loaded, no room beside what is loaded before it; it "
          "loads on its first request",
          in->name());
      continue;
    }
    g.start(in->index, {}, "prestart");
  }
}

ModelState ModelResidency::Impl::state_of(const std::string& model) const {
  ModelState s{model, "unloaded", false, "", std::nullopt};
  Presence presence;
  for (const auto& in : env.instances()) {
    if (in->model() != model || retired(*in)) continue;
    if (on_demand(*in)) {
      const auto it = tracks.find(in->index);
      const auto phase = it == tracks.end() ? Track::Phase::unloaded : it->second.phase;
      if (phase == Track::Phase::loaded || phase == Track::Phase::unloading) presence.engine(*in);
      presence.loading |= phase == Track::Phase::loading;
      if (it != tracks.end() && it->second.failed && phase == Track::Phase::unloaded) {
        s.failed = true;
        s.problem = in->problem;
        s.exit_code = in->exit_code;
      }
      continue;
    }
    presence.always_on(*in);
  }
  s.value = presence.value();
  if (s.value != "unloaded") s.failed = false;
  return s;
}

ModelState ModelResidency::model(const std::string& name) const {
  return impl_->state_of(name);
}

std::vector<ModelState> ModelResidency::models() const {
  std::vector<ModelState> out;
  for (const auto& m : impl_->config.models) out.push_back(impl_->state_of(m.name));
  return out;
}

std::map<std::string, std::uint64_t> ModelResidency::memory_in_use() const {
  return profiles::memory_in_use(impl_->residents());
}

double ModelResidency::expected_load_seconds(const std::string& model) const {
  return impl_->expected_load_seconds(model);
}

void ModelResidency::on_event(std::function<void(const ResidencyEvent&)> callback) {
  impl_->on_event = std::move(callback);
}

}  // namespace switchyard::profiles
