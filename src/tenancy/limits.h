// The per-key limits as plain arithmetic on a clock passed in (unit tests
// use a fake one): GCRA for rpm and tpm, a UTC-day budget for tokens, and
// session seats. Single-threaded; the gateway's I/O thread owns them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::tenancy {

using Clock = std::chrono::system_clock;
using Time = Clock::time_point;
using Duration = std::chrono::nanoseconds;
// The wall clock limits are checked on: system_now, or a test's.
using WallClock = std::function<Time()>;
inline Time system_now() {
  return Clock::now();
}

// Generic cell rate algorithm with a cost per request: `limit` units per
// `period`, of which a whole period's worth may be taken at once; it then
// refills evenly (one unit every period / limit). One timestamp of state.
class Gcra {
 public:
  Gcra(std::int64_t limit, Duration period);

  std::int64_t limit() const { return limit_; }
  // Takes `cost` units when they fit; else takes nothing and says how long
  // until they would. A cost above the limit never fits.
  struct Taken {
    bool ok;
    Duration retry_after;  // when !ok
  };
  Taken take(Time now, std::int64_t cost);
  // Whether `cost` units would fit now, taking nothing.
  Taken peek(Time now, std::int64_t cost) const;
  // Gives back (negative) or charges (positive) units already decided on:
  // the correction of a reservation to what was used.
  void adjust(std::int64_t delta);
  // As if `limit - remaining` units had just been taken: a bucket that
  // carries on from a count read elsewhere (redis_down: local).
  void start_at(Time now, std::int64_t remaining);
  std::int64_t remaining(Time now) const;
  // Until the limit is whole again.
  Duration reset(Time now) const;

 private:
  std::int64_t limit_;
  Duration period_;
  double interval_;  // nanoseconds per unit
  Time tat_{};       // theoretical arrival time: when everything taken has refilled
};

// The UTC day `t` falls on, as days since the epoch.
std::int64_t utc_day(Time t);

// Tokens per UTC day. take() reserves, adjust() corrects.
class DayBudget {
 public:
  explicit DayBudget(std::int64_t limit) : limit_(limit) {}
  std::int64_t limit() const { return limit_; }
  // Fails (taking nothing) when used + cost would pass the limit; then
  // `retry_after` is the time to the next UTC midnight.
  Gcra::Taken take(Time now, std::int64_t cost);
  Gcra::Taken peek(Time now, std::int64_t cost) const;
  void adjust(Time now, std::int64_t delta);
  std::int64_t used(Time now) const;

 private:
  std::int64_t limit_;
  std::int64_t day_ = 0;
  std::int64_t used_ = 0;
};

// A request without a conversation (no X-Session-Id, no messages) is a
// session of its own for as long as it runs: without this a key's seats
// held chat agents but let every /v1/completions request through. `n` makes
// it unique; the name cannot collide with a client's X-Session-Id (not
// printable) or a derived one (hex).
std::string one_request_session(std::uint64_t n);
bool is_one_request_session(std::string_view session);

// Active agent sessions of one key: a session holds a seat from its first
// request until `idle` after its last one ended; while one of its requests
// runs it never idles out. A one-request session's seat frees when its
// request ends.
class SessionSeats {
 public:
  SessionSeats(int cap, Duration idle) : cap_(cap), idle_(idle) {}
  int cap() const { return cap_; }
  void set(int cap, Duration idle) {
    cap_ = cap;
    idle_ = idle;
  }

  // Whether `session` holds or may take a seat (taking it and counting the
  // request as running).
  bool enter(const std::string& session, Time now);
  // Whether `session` holds a seat now.
  bool seated(const std::string& session, Time now);
  // One of the session's requests ended.
  void leave(const std::string& session, Time now);
  // When the seat that frees first frees: nullopt while every seated
  // session has a request running (it frees `idle` after that one ends).
  std::optional<Time> next_free(Time now);
  int active(Time now);

 private:
  void expire(Time now);
  struct Seat {
    int running = 0;
    Time last_end{};
  };
  int cap_;
  Duration idle_;
  std::map<std::string, Seat, std::less<>> seats_;
};

}  // namespace switchyard::tenancy
