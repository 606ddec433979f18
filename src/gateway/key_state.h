// What the gateway tracks per API key while it runs (gateway/admission):
// the rate and budget counters, the requests running, the session seats,
// and the requests waiting in the key's lane for a slot or a seat.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "config/fleet_config.h"
#include "tenancy/limits.h"
#include "tenancy/shared_limits.h"

namespace switchyard::gateway {

struct KeyWaiter;  // gateway/admission.cpp

struct KeyState {
  KeyState(std::string name_, const tenancy::KeyLimits& limits_, tenancy::WallClock now_);
  // New limits; counters of the limits that stay the same carry on.
  void set_limits(const tenancy::KeyLimits& next);

  std::string name;
  tenancy::WallClock now;  // the Admit stage's
  tenancy::KeyLimits limits;
  std::optional<tenancy::Gcra> rpm, tpm;
  std::optional<tenancy::DayBudget> day;
  tenancy::SessionSeats seats;
  int running = 0;
  bool revoked = false;
  std::list<KeyWaiter*> waiters;  // in arrival order; owned by their coroutines
  // With Redis: what its counters said at this key's last request, and when.
  struct SharedReading {
    tenancy::RatesTaken rates;
    tenancy::Time at;
  };
  std::optional<SharedReading> last_shared;
  // redis_down: local. These split counters (`limits` = `whole` ÷ `gateways`)
  // start from this gateway's share of what Redis last said was left, refilled
  // since: starting full, every gateway would add its whole share again.
  void carry_on_from(const SharedReading& last, const tenancy::KeyLimits& whole, int gateways);
};

// What admission took for one request: a running slot, a session's seat,
// reserved tokens, locally or (with a lease) in Redis. Given back when
// destroyed. Like RouteLease it may outlive the gateway (frames destroyed at
// shutdown): it then gives back nothing (Redis leases expire on their own).
class KeyTicket {
 public:
  KeyTicket() = default;
  KeyTicket(std::weak_ptr<KeyState> state, std::string session, std::int64_t reserved)
      : state_(std::move(state)), session_(std::move(session)), reserved_(reserved) {}
  // Held in Redis (tenancy::SharedLimits): `state` only for its waiters.
  KeyTicket(std::weak_ptr<KeyState> state, std::weak_ptr<tenancy::SharedLimits> shared,
            std::uint64_t lease)
      : state_(std::move(state)), shared_(std::move(shared)), lease_(lease) {}
  KeyTicket(KeyTicket&& o) noexcept
      : state_(std::move(o.state_)),
        session_(std::move(o.session_)),
        reserved_(o.reserved_),
        shared_(std::move(o.shared_)),
        lease_(std::exchange(o.lease_, 0)) {}
  KeyTicket& operator=(KeyTicket&& o) noexcept;
  ~KeyTicket() { release(); }

  explicit operator bool() const { return !state_.expired(); }
  std::uint64_t lease() const { return lease_; }
  // The tokens admission charged for the request.
  void set_reserved(std::int64_t tokens) { reserved_ = tokens; }
  // The reservation corrected to `used` tokens (the request's usage).
  void correct(std::int64_t used, tenancy::Time now);
  // Gives everything back now (as destruction would).
  void release();
  // A Redis-held ticket's taken request and tokens given back (the request
  // was refused after the rates let it through).
  void refund();

 private:
  std::weak_ptr<KeyState> state_;
  std::string session_;  // empty: no seat held
  std::int64_t reserved_ = 0;
  std::weak_ptr<tenancy::SharedLimits> shared_;
  std::uint64_t lease_ = 0;  // 0: held locally
};

// Hands freed slots and seats to the key's waiters in order (admission.cpp).
void serve_waiters(KeyState& state);

}  // namespace switchyard::gateway
