#include "tenancy/shared_limits.h"

#include <boost/asio.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::tenancy {

namespace net = boost::asio;
using net::awaitable;

namespace {

constexpr std::int64_t day_counter_ttl_ms = 2 * 86'400'000;

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string number(std::optional<std::int64_t> v) {
  return std::to_string(v.value_or(0));
}

Duration ms(long long n) {
  return std::chrono::milliseconds(std::max(0LL, n));
}

// The integers of an array reply, or an error naming the script.
Result<std::vector<long long>> integers(const RedisReply& r, std::string_view script,
                                        std::size_t at_least) {
  if (r.type != RedisReply::Type::array || r.elements.size() < at_least)
    return Error{fmt::format("{}: unexpected reply", script)};
  std::vector<long long> out;
  for (const auto& e : r.elements) out.push_back(e.integer);
  return out;
}

}  // namespace

tenancy::KeyLimits split_limits(const tenancy::KeyLimits& limits, int gateways) {
  tenancy::KeyLimits out = limits;
  const auto n = std::max(1, gateways);
  const auto part = [n](auto v) { return std::max<decltype(v)>(1, v / n); };
  if (out.rpm) out.rpm = part(*out.rpm);
  if (out.tpm) out.tpm = part(*out.tpm);
  if (out.tokens_per_day) out.tokens_per_day = part(*out.tokens_per_day);
  if (out.max_concurrency) out.max_concurrency = part(*out.max_concurrency);
  if (out.max_sessions) out.max_sessions = part(*out.max_sessions);
  return out;
}

bool needs_shared_state(const tenancy::KeyLimits& l) {
  return l.rpm || l.tpm || l.tokens_per_day || l.max_concurrency || l.max_sessions;
}

SharedLimits::SharedLimits(net::any_io_executor executor, SharedLimitsOptions options)
    : executor_(executor),
      options_(std::move(options)),
      client_(executor, options_.redis),
      subscriber_(executor, options_.redis),
      tick_(executor) {}

SharedLimits::~SharedLimits() {
  stop();
}

void SharedLimits::start() {
  // Once per transition, not per request.
  client_.on_state([this](bool up) {
    if (up)
      spdlog::info("redis at {} reachable: limits shared across gateways", client_.address());
    else if (options_.local_when_down)
      spdlog::warn(
          "redis at {} unreachable ({}): each key's limits ÷ {} gateway(s) (last seen) "
          "enforced by each gateway until it is back",
          client_.address(), client_.last_error(), gateways_);
    else
      spdlog::warn(
          "redis at {} unreachable ({}): requests that need a limit check get 503 "
          "until it is back",
          client_.address(), client_.last_error());
    if (on_state_) on_state_(up);
  });
  client_.start();
  // This gateway's own releases too: the message comes once the release is
  // in Redis, a waiter that asked just before it finished asks again then.
  if (on_released_)
    listen(std::string(released_channel), [this](const std::string& key) { on_released_(key); });
  if (!listeners_.empty()) {
    std::vector<std::string> channels;
    for (const auto& [channel, fn] : listeners_) channels.push_back(channel);
    subscriber_.subscribe(std::move(channels),
                          [this](const std::string& channel, const std::string& message) {
                            if (auto it = listeners_.find(channel); it != listeners_.end())
                              it->second(message);
                          });
    subscriber_.start();
  }
  net::co_spawn(executor_, keep_alive(), net::detached);
}

void SharedLimits::stop() {
  if (stopped_) return;
  stopped_ = true;
  alive_.reset();
  tick_.cancel();
  subscriber_.stop();
  client_.stop();
}

std::string SharedLimits::down_message(const std::string& why) const {
  return fmt::format("redis at {} unreachable: {}", client_.address(), why);
}

std::uint64_t SharedLimits::open(const std::string& key, const tenancy::KeyLimits& limits,
                                 const std::string& session) {
  const std::uint64_t id = next_lease_++;
  leases_.emplace(id, Lease{key, limits, session, fmt::format("{}:{}", options_.gateway_id, id), 0,
                            false, false});
  return id;
}

std::vector<std::string> SharedLimits::rate_keys(const Lease& l) const {
  return {redis_key(l.key, "rpm"), redis_key(l.key, "tpm"),
          redis_key(l.key, fmt::format("day:{}", utc_day(unix_ms_now())))};
}

awaitable<Result<RatesTaken>> SharedLimits::take_rates(std::uint64_t id, std::int64_t cost) {
  auto it = leases_.find(id);
  if (it == leases_.end()) co_return Error{"no such lease"};
  const auto& l = it->second.limits;
  if (!l.rpm && !l.tpm && !l.tokens_per_day) co_return RatesTaken{};
  std::vector<std::string> args{number(l.rpm), number(l.tpm), std::to_string(cost),
                                number(l.tokens_per_day), std::to_string(day_counter_ttl_ms)};
  auto reply = co_await eval(redis_scripts::take_rates, rate_keys(it->second), std::move(args));
  if (!reply) co_return reply.error();
  auto v = integers(*reply, redis_scripts::take_rates.name, 7);
  if (!v) co_return v.error();
  RatesTaken t;
  t.refused = static_cast<RatesTaken::Refused>(std::clamp((*v)[0], 0LL, 3LL));
  t.retry_after = ms((*v)[1]);
  t.requests = {(*v)[2], ms((*v)[3])};
  t.tokens = {(*v)[4], ms((*v)[5])};
  t.used_today = (*v)[6];
  if (t.refused == RatesTaken::Refused::day) {
    const auto now = Clock::now();
    t.retry_after = std::chrono::floor<std::chrono::days>(now) + std::chrono::days(1) - now;
  }
  if (t.refused == RatesTaken::Refused::none) {
    if (auto again = leases_.find(id); again != leases_.end()) {
      again->second.reserved = cost;
      again->second.took_request = true;
    }
  }
  co_return t;
}

awaitable<Result<SlotTaken>> SharedLimits::acquire(std::uint64_t id) {
  auto it = leases_.find(id);
  if (it == leases_.end()) co_return Error{"no such lease"};
  const Lease l = it->second;  // a copy: close() may erase it meanwhile
  if (!l.limits.max_concurrency && !l.limits.max_sessions) co_return SlotTaken{};
  std::vector<std::string> keys{redis_key(l.key, "running"), redis_key(l.key, "seats")};
  std::vector<std::string> args{l.member, std::to_string(options_.lease_ttl.count()),
                                std::to_string(l.limits.max_concurrency.value_or(0)), l.session,
                                std::to_string(l.limits.max_sessions.value_or(0))};
  auto reply = co_await eval(redis_scripts::acquire, std::move(keys), std::move(args));
  if (!reply) co_return reply.error();
  auto v = integers(*reply, redis_scripts::acquire.name, 1);
  if (!v) co_return v.error();
  SlotTaken t;
  t.answer = static_cast<SlotAnswer>(std::clamp((*v)[0], 0LL, 2LL));
  if (t.answer == SlotAnswer::sessions_full && v->size() > 1) t.seat_frees_in = ms((*v)[1]);
  if (t.answer == SlotAnswer::taken) {
    if (auto again = leases_.find(id); again != leases_.end())
      again->second.holds_slot = true;
    else  // closed while the script ran: give the slot straight back
      release(l);
  }
  co_return t;
}

void SharedLimits::correct(std::uint64_t id, std::int64_t used) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return;
  Lease& l = it->second;
  const std::int64_t delta = used - l.reserved;
  l.reserved = used;
  if (delta == 0 || (!l.limits.tpm && !l.limits.tokens_per_day)) return;
  spawn_eval(redis_scripts::correct_rates, rate_keys(l),
             {number(l.limits.rpm), number(l.limits.tpm), "0", std::to_string(delta),
              std::to_string(day_counter_ttl_ms)});
}

void SharedLimits::refund(std::uint64_t id) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return;
  Lease& l = it->second;
  if (!l.took_request) return;
  spawn_eval(redis_scripts::correct_rates, rate_keys(l),
             {number(l.limits.rpm), number(l.limits.tpm), "-1", std::to_string(-l.reserved),
              std::to_string(day_counter_ttl_ms)});
  l.took_request = false;
  l.reserved = 0;
}

void SharedLimits::close(std::uint64_t id) {
  auto it = leases_.find(id);
  if (it == leases_.end()) return;
  const Lease& l = it->second;
  if (l.holds_slot) release(l);
  leases_.erase(it);
}

void SharedLimits::release(const Lease& l) {
  spawn_eval(redis_scripts::release, {redis_key(l.key, "running"), redis_key(l.key, "seats")},
             {l.member, l.session,
              is_one_request_session(l.session) ? std::string("0")
                                                : std::to_string(l.limits.session_idle.count()),
              std::string(released_channel), l.key});
}

awaitable<Result<RedisReply>> SharedLimits::eval(const redis_scripts::Script& script,
                                                 std::vector<std::string> keys,
                                                 std::vector<std::string> args) {
  const std::weak_ptr<char> alive = alive_;
  const auto command = [&](std::string verb, std::string what) {
    std::vector<std::string> c{std::move(verb), std::move(what), std::to_string(keys.size())};
    c.insert(c.end(), keys.begin(), keys.end());
    c.insert(c.end(), args.begin(), args.end());
    return c;
  };
  auto sha = shas_.find(script.name);
  if (sha == shas_.end()) {
    std::vector<std::string> load{"SCRIPT", "LOAD", std::string(script.text)};
    auto loaded = co_await client_.command(std::move(load));
    if (!alive.lock()) co_return Error{"stopped"};
    if (!loaded) co_return loaded.error();
    if (loaded->is_error()) co_return Error{fmt::format("{}: {}", script.name, loaded->str)};
    sha = shas_.emplace(script.name, loaded->str).first;
  }
  auto reply = co_await client_.command(command("EVALSHA", sha->second));
  if (!alive.lock()) co_return Error{"stopped"};
  // A Redis restarted or flushed since the load: EVAL sends the text (and
  // caches it under the same SHA1 again).
  if (reply && reply->is_error() && reply->str.starts_with("NOSCRIPT")) {
    reply = co_await client_.command(command("EVAL", std::string(script.text)));
    if (!alive.lock()) co_return Error{"stopped"};
  }
  if (!reply) co_return reply.error();
  if (reply->is_error()) co_return Error{fmt::format("{}: {}", script.name, reply->str)};
  co_return reply;
}

void SharedLimits::spawn_eval(const redis_scripts::Script& script, std::vector<std::string> keys,
                              std::vector<std::string> args) {
  if (stopped_ || !client_.up()) return;  // what it would change expires on its own
  net::co_spawn(
      executor_,
      [](SharedLimits* self, const redis_scripts::Script* s, std::vector<std::string> k,
         std::vector<std::string> a) -> awaitable<void> {
        auto r = co_await self->eval(*s, std::move(k), std::move(a));
        if (!r && r.error().message != "stopped")
          spdlog::debug("redis: {}: {}", s->name, r.error().message);
      }(this, &script, std::move(keys), std::move(args)),
      net::detached);
}

awaitable<void> SharedLimits::keep_alive() {
  const std::weak_ptr<char> alive = alive_;
  const auto period =
      std::min<std::chrono::milliseconds>(options_.lease_ttl / 3, std::chrono::seconds(1));
  const auto heartbeat_ttl = std::to_string(std::max<std::int64_t>(3000, 3 * period.count()));
  while (alive.lock() && !stopped_) {
    if (client_.up()) {
      std::vector<std::string> keys{"switchyard:gateways"};
      std::vector<std::string> args{options_.gateway_id, heartbeat_ttl};
      auto n = co_await eval(redis_scripts::heartbeat, std::move(keys), std::move(args));
      if (!alive.lock() || stopped_) co_return;
      if (n && n->type == RedisReply::Type::integer) gateways_ = std::max(1LL, n->integer);
      for (const auto& [id, l] : leases_)
        if (l.holds_slot)
          spawn_eval(redis_scripts::renew, {redis_key(l.key, "running"), redis_key(l.key, "seats")},
                     {l.member, std::to_string(options_.lease_ttl.count()), "0", l.session});
    }
    tick_.expires_after(period);
    co_await tick_.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace switchyard::tenancy
