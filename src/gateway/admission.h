// Who may go ahead, and when. Two stages:
//
// * authenticate (body stage, first): the request's key by name into
//   ctx.key_name (the head stage already refused requests without a valid
//   key; a key revoked since is refused here).
// * admit (after resolve, where ctx.model and ctx.session are set): not
//   while draining; then the key's limits (docs/keys.md): the models it may
//   use, rpm / tpm / tokens per day (429 at once, with Retry-After), and
//   max_concurrency / max_sessions, whose excess waits in the key's lane up
//   to queue.max_wait. The limits are counted by a tenancy::Limiter: this
//   gateway's own, or Redis's shared by several gateways. Tokens are
//   reserved on admission (the estimated prompt plus max_tokens) and
//   corrected to the usage at the end (finish()). Every answer past this
//   stage carries the x-ratelimit-* headers of the key's rpm and tpm.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/fleet_config.h"
#include "gateway/api_keys.h"
#include "gateway/key_ticket.h"
#include "gateway/pipeline.h"
#include "tenancy/local_limits.h"
#include "tenancy/shared_limits.h"

namespace switchyard::gateway {

class Authenticate final : public Stage {
 public:
  // `keys` must outlive the stage (it may be reassigned).
  explicit Authenticate(const ApiKeys& keys) : keys_(keys) {}
  Decision check(RequestContext& ctx) override;

 private:
  const ApiKeys& keys_;
};

class Admit final : public WaitingStage {
 public:
  // All references must outlive the stage. Single-threaded (the I/O thread).
  // `now`: the wall clock rates, budgets and seats are counted on (the
  // waits themselves are timers on the executor).
  Admit(boost::asio::any_io_executor executor, const bool& draining, const ApiKeys& keys,
        const config::QueueOptions& queue, tenancy::WallClock now = &tenancy::system_now);
  // A request without a key has nothing to count or wait for: next, at
  // once (while not draining).
  Decision check(RequestContext& ctx) override;
  // What check() left: a draining gateway's refusal, or a key's limits.
  boost::asio::awaitable<Verdict> run(RequestContext& ctx) override;

  // The key table changed: new limits apply now; a revoked or removed key's
  // waiting requests are refused at once.
  void keys_changed();
  // The request ended: its token reservation corrected to its usage, its
  // slot and seat given back.
  void finish(RequestContext& ctx) override;
  // Shutdown: every wait ends with 503.
  void release_all();
  // Limits shared through Redis from now on (docs/keys.md, "Several
  // gateways"); while it is unreachable, requests that need a check get 503
  // limits_unavailable, or with `local_when_down` each key's limits ÷ the
  // gateways last seen, enforced here.
  void share_limits(std::shared_ptr<tenancy::SharedLimits> shared, bool local_when_down);
  // A slot or seat of `key` freed in Redis (by any gateway): its waiters
  // here ask Redis again now.
  void wake(const std::string& key);

  // What a key holds now, for the console (GET /admin/keys): nullopt before
  // its first request. Not const: idle seats are let go as they are counted.
  struct KeyLoad {
    int running = 0;   // requests admitted and not finished
    int sessions = 0;  // sessions seated (kept only with max_sessions)
    int waiting = 0;   // requests waiting in the key's lane
  };
  std::optional<KeyLoad> load(std::string_view key);
  // Budget start: the tokens each key (by name) used on the UTC day of
  // `as_of` before this gateway started; a key's tokens-per-day starts from
  // them, so a restart does not renew its budget.
  void start_budgets(std::map<std::string, std::int64_t, std::less<>> spent, tenancy::Time as_of);

 private:
  struct SlotWait;
  std::shared_ptr<KeyLane> lane_of(const std::string& key);
  // The seat a request needs under `limits`; empty: none.
  std::string seat_of(const RequestContext& ctx, const tenancy::KeyLimits& limits);
  // The key's `limits` on `limiter` (this gateway's counters, Redis's, or
  // the outage's split share): the rates, then a slot and seat, waiting for
  // them in the key's lane. nullopt when the limiter failed (`failure` says
  // why): nothing is held then, and the caller answers as redis_down says.
  boost::asio::awaitable<std::optional<Verdict>> limit(RequestContext& ctx, const std::string& name,
                                                       const tenancy::KeyLimits& limits,
                                                       std::shared_ptr<tenancy::Limiter> limiter,
                                                       std::int64_t cost, std::string& failure);
  // Waits in `lane` until the limiter grants the lease a slot, up to
  // queue.max_wait. `first`: the limiter's answer on arrival (none: a pass
  // was under way, so the request waited its turn).
  boost::asio::awaitable<SlotWait> wait_for_slot(RequestContext& ctx, tenancy::Limiter& limiter,
                                                 std::uint64_t lease, std::shared_ptr<KeyLane> lane,
                                                 std::optional<tenancy::SlotTaken> first);
  // The answer to a request the wait did not grant a slot.
  boost::asio::awaitable<Verdict> refuse_slot(RequestContext& ctx, const std::string& name,
                                              const tenancy::KeyLimits& limits,
                                              const SlotWait& wait, const KeyLane& lane);
  // redis_down: local. The key's split limits, its counters started from
  // what Redis last said.
  tenancy::KeyLimits fallback_limits(const KeyEntry& key);

  boost::asio::any_io_executor executor_;
  tenancy::WallClock now_;
  const bool& draining_;
  const ApiKeys& keys_;
  const config::QueueOptions& queue_;
  bool closed_ = false;
  std::uint64_t one_request_sessions_ = 0;  // numbers the seats of requests without a session
  std::map<std::string, std::shared_ptr<KeyLane>, std::less<>> lanes_;
  std::shared_ptr<tenancy::LocalLimits> local_;
  std::shared_ptr<tenancy::SharedLimits> shared_;  // null: limits are this gateway's own
  bool local_when_down_ = false;
  // The split limits' counters while Redis is unreachable (redis_down: local).
  std::shared_ptr<tenancy::LocalLimits> fallback_;
};

// Tokens a request may use at most, for the reservation and the queue's
// charge (openai/request_estimate.h): its prompt plus its max_tokens (1024
// when absent on a generating route).
std::int64_t reserved_tokens(const RequestContext& ctx);

// "250ms", "1s", "6m0s", "1h2m3s": how OpenAI writes x-ratelimit-reset-*.
std::string reset_text(tenancy::Duration d);

}  // namespace switchyard::gateway
