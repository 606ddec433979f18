// What admission asks of a key's limits, wherever they are counted: this
// gateway's own counters (LocalLimits) or Redis's, shared by every gateway
// on it (SharedLimits). A request holds a lease from open() to close().
// Single-threaded: the gateway's I/O thread.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "tenancy/key_limits.h"
#include "tenancy/limits.h"

namespace switchyard::tenancy {

// What the rate counters said: for the x-ratelimit-* headers.
struct RateState {
  std::int64_t remaining = 0;
  Duration reset{};
};

struct RatesTaken {
  enum class Refused { none, rpm, tpm, day } refused = Refused::none;
  Duration retry_after{};
  RateState requests, tokens;
  std::int64_t used_today = 0;
};

enum class SlotAnswer { taken, concurrency_full, sessions_full };
struct SlotTaken {
  SlotAnswer answer = SlotAnswer::taken;
  // sessions_full: until the oldest seat frees; nullopt while every seated
  // session runs a request (it frees session_idle after that one ends).
  std::optional<Duration> seat_frees_in;
};

class Limiter {
 public:
  virtual ~Limiter() = default;
  // A request's lease on `key`'s limits; `session`: the seat it needs
  // (empty: none).
  virtual std::uint64_t open(const std::string& key, const KeyLimits& limits,
                             const std::string& session) = 0;
  // Takes one request and `cost` tokens (rpm, tpm, tokens per day), or
  // takes nothing and says which limit refused. An error: the counters
  // could not be reached.
  virtual boost::asio::awaitable<Result<RatesTaken>> take_rates(std::uint64_t lease,
                                                                std::int64_t cost) = 0;
  // A running slot (and the session's seat) for the lease, or why not now.
  virtual boost::asio::awaitable<Result<SlotTaken>> acquire(std::uint64_t lease) = 0;
  // The tokens taken corrected to `used` (the request's usage).
  virtual void correct(std::uint64_t lease, std::int64_t used) = 0;
  // What take_rates took given back (the request was refused after them).
  virtual void refund(std::uint64_t lease) = 0;
  // The slot and seat given back; the lease is forgotten.
  virtual void close(std::uint64_t lease) = 0;
};

}  // namespace switchyard::tenancy
