// What admission holds for a request of a key (KeyTicket): a lease on the
// key's limits, wherever they are counted (tenancy::Limiter), given back
// when the request ends; and the key's lane, where its requests wait for a
// running slot or a session seat (KeyLane).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <utility>

#include "tenancy/limiter.h"
#include "tenancy/local_limits.h"

namespace switchyard::gateway {

struct KeyWaiter;  // gateway/admission.cpp

// The requests of one key waiting for a slot or a seat, in arrival order.
// When one frees, the waiters ask their limiter again one after another in
// that order (a pass), so that a freed slot goes to the longest waiting
// request that can use it: a seated session's request may go ahead of
// those waiting for a seat.
struct KeyLane {
  std::list<KeyWaiter*> waiters;  // owned by their coroutines
  bool revoked = false;           // the key is gone: every waiter is refused
  bool passing = false;           // a pass is under way
  bool again = false;             // something freed during the pass: another follows
  // With Redis: what its counters said at the key's last request.
  std::optional<tenancy::LocalLimits::SharedReading> last_shared;
};

// Something of the key freed: its waiters ask again, in order (admission.cpp).
void wake(KeyLane& lane);

// A request's lease, closed when the ticket is released or destroyed. Like
// RouteLease it may outlive the gateway (frames destroyed at shutdown): it
// then gives back nothing (Redis leases expire on their own).
class KeyTicket {
 public:
  KeyTicket() = default;
  KeyTicket(std::weak_ptr<tenancy::Limiter> limiter, std::uint64_t lease,
            std::weak_ptr<KeyLane> lane)
      : limiter_(std::move(limiter)), lease_(lease), lane_(std::move(lane)) {}
  KeyTicket(KeyTicket&& o) noexcept
      : limiter_(std::move(o.limiter_)),
        lease_(std::exchange(o.lease_, 0)),
        lane_(std::move(o.lane_)) {}
  KeyTicket& operator=(KeyTicket&& o) noexcept;
  ~KeyTicket() { release(); }

  explicit operator bool() const { return lease_ != 0 && !limiter_.expired(); }
  // The tokens taken corrected to `used` (the request's usage).
  void correct(std::int64_t used);
  // What the rates took given back (the request was refused after them).
  void refund();
  // The lease closed now (as destruction would); the key's waiters ask again.
  void release();

 private:
  std::weak_ptr<tenancy::Limiter> limiter_;
  std::uint64_t lease_ = 0;
  std::weak_ptr<KeyLane> lane_;
};

}  // namespace switchyard::gateway
