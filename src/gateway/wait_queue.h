// Where requests wait, per model, when every slot of the model is busy (or
// its instances are still starting): in the gateway, where they can be
// ordered, not inside an engine. The order, when a slot frees:
//
//   1. retries, which have waited their turn already, in the order they came;
//   2. priority bands, highest first (the key's `priority`);
//   3. within a band, start-time fair queueing across API keys (Goyal, Vin
//      and Cheng, SIGCOMM 1996), charged in estimated tokens and weighted by
//      the key's `weight`, as VTC (arXiv 2401.00588) charges tokens, and
//      corrected to the usage at the end (correct()): each key's next
//      request carries a virtual start tag, and the smallest goes first (on
//      a tie the key with fewer waiting). A key that starts waiting begins at the band's virtual
//      time (the start tag served last) unless it was served past it already, so a key that sends
//      one request at a time goes ahead of a flooding key's next request: it waits for the next
//      freed slot, at most one request's service time, not for the flood;
//   4. FIFO within a key.
//
// Prefix handoff (issue 13): a slot freed on instance X goes, among the
// waiters fairness allows next, to the one whose prompt X holds most of by
// the routing policy's own score (Router::match; 0 for policies without
// affinity, which leaves the fair order alone). Those waiters are the first
// waiter of the lane with the smallest start tag (the fair pick) and the
// first waiters of the same band's other lanes whose start tag is below the
// fair pick's finish tag: start-time fair queueing would start them before
// the fair pick's request ends, so taking one first delays the fair pick by
// one request at most, never a higher band and never a key's own order.
//
// A slot is handed on only when Router::acquire grants one for the waiter's
// own query, as before. A waiter the policy keeps for its busy home
// (routing.home_wait: Refusal::waiting_for_home) passes the slot to the
// next waiter in the same order, its own key's next included (it chose to
// wait, which must not hold up the key's other sessions), and the queue
// tries it again when its home wait ends, free slot or not. A waiter bound to
// one instance (RouteQuery::only: its stored response is there) passes a slot
// of another the same way.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/fleet_config.h"
#include "gateway/queue_share.h"
#include "gateway/route_query.h"
#include "gateway/router.h"

namespace switchyard::gateway {

struct Admission {
  enum class Outcome {
    granted,        // `lease` holds a slot
    queue_full,     // queue.max_length waiters already
    timed_out,      // no slot within queue.max_wait
    cancelled,      // the caller was cancelled (client gone)
    shutting_down,  // the gateway stopped waiting (drain deadline)
    key_revoked,    // the request's API key was revoked while it waited
    refused,        // its model cannot come (a failed load): refuse_model()
  };
  Outcome outcome = Outcome::cancelled;
  RouteLease lease;
  double waited_seconds = 0;
  std::uint64_t charged = 0;  // the band that charged its cost (QueueShare::charged); 0: none
};

// Single-threaded, like the Router it feeds from.
class WaitQueue {
 public:
  WaitQueue(boost::asio::any_io_executor executor, Router& router, config::QueueOptions options);
  ~WaitQueue();

  // A slot at once when one is free and nobody waits; otherwise waits in
  // the model's line (a retry, which has waited its turn already, ahead of
  // the rest). The slot is chosen as Router::acquire chooses for `query`,
  // whose views must stay valid until this completes; `share` places it
  // among the other keys' requests. It waits at most `max_wait`
  // (queue.max_wait, or a retry's remaining budget).
  boost::asio::awaitable<Admission> acquire(RouteQuery query, bool retry,
                                            std::chrono::milliseconds max_wait,
                                            QueueShare share = {});

  // Hands free slots of `model` to its waiters in queue order, each by its
  // own query. Called when a slot frees (`freed`: on which instance, for the
  // prefix handoff) and when an instance becomes ready.
  void dispatch(const std::string& model, std::optional<std::size_t> freed = std::nullopt);

  // A request the queue charged (`share.charged` set from its Admission)
  // ended having used `used` tokens: its key's tags move by the difference,
  // so a key is charged what its requests used, not their max_tokens (as
  // VTC charges served tokens). Nothing when that band is gone.
  void correct(std::string_view model, std::string_view key, const QueueShare& share,
               std::int64_t used);

  // Ends the waits of `key`'s requests with key_revoked.
  void refuse_key(std::string_view key);
  // Ends the waits of `model`'s requests with refused.
  void refuse_model(const std::string& model);

  // Profiles: every waiter of `model` waits at least `bound` from now (a
  // switch holds the model; their queue.max_wait must not run out on it).
  void extend(const std::string& model, std::chrono::milliseconds bound);

  // Ends every wait with shutting_down.
  void release_all();

  int depth(std::string_view model) const;

 private:
  struct Waiter;
  struct Lane {
    double weight = 1;
    double start = 0;  // the virtual start tag of its first waiter
    std::deque<std::shared_ptr<Waiter>> waiters;
  };
  struct Band {
    std::map<std::string, Lane, std::less<>> lanes;  // keys with waiters
    // Keys without waiters that were served past `now`: where their next
    // request starts (one at a time they may not take more than their share).
    std::map<std::string, double, std::less<>> finish;
    double now = 0;        // virtual time: the start tag of the request served last
    std::uint64_t id = 0;  // unique while the queue lives: a request's charge names it
  };
  struct Line {
    std::deque<std::shared_ptr<Waiter>> retries;
    std::map<int, Band, std::greater<>> bands;  // highest priority first
    int size = 0;
  };
  // A new waiter at the back of its lane (or of the retries).
  void enqueue(Line& line, const std::shared_ptr<Waiter>& waiter);
  void remove(Line& line, const std::shared_ptr<Waiter>& waiter);
  // Waiters that passed on the slot being handed (waiting for their homes):
  // the next of their key goes in their place.
  using Passed = std::vector<const Waiter*>;
  // The first waiter of `lane` not in `passed`; null when none.
  static Waiter* next(Lane& lane, const Passed& passed);
  // The lane whose first waiter fairness serves next: the smallest start
  // tag; on a tie the fewer waiters, then the earlier arrival. Lanes whose
  // first waiter is in `passed` are skipped; null when every one is.
  static Lane* fair_pick(Band& band, const Passed& passed);
  // The lane to serve from `band` when a slot freed on `freed`: of those
  // fairness allows next (see the top of this file), the best match there.
  Lane& handoff(Band& band, Lane& fair, std::size_t freed, const Passed& passed);
  // Dispatches `model` again at `when` (a home wait's end); once per time.
  void dispatch_at(const std::string& model, std::chrono::steady_clock::time_point when);
  // Calls `f` with every waiter of `line`.
  template <class F>
  static void for_each_waiter(Line& line, F f);
  static void grant(Waiter& waiter, RouteLease lease);

  boost::asio::any_io_executor executor_;
  Router& router_;
  const config::QueueOptions options_;
  std::map<std::string, Line, std::less<>> lines_;
  std::uint64_t arrivals_ = 0;  // numbers waiters in arrival order
  std::uint64_t bands_ = 0;     // numbers bands as they are created
  bool closed_ = false;
  std::set<std::pair<std::string, std::chrono::steady_clock::time_point>>
      timed_;                                                   // dispatch_at()'s
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // false once destroyed
};

}  // namespace switchyard::gateway
