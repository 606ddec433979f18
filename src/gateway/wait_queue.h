// Where requests wait, per model, when every slot of the model is busy (or
// its instances are still starting): in the gateway, where they can be
// ordered, not inside an engine. The order, when a slot frees:
//
//   1. retries, which have waited their turn already, in the order they came;
//   2. priority bands, highest first (the key's `priority`);
//   3. within a band, deficit round robin across API keys, charged in
//      estimated tokens and weighted by the key's `weight` (after VTC,
//      arXiv 2401.00588): a key flooding the queue delays another key's
//      lone request by about one request, not by the whole flood;
//   4. FIFO within a key.
//
// A slot is handed on only when Router::acquire grants one for the waiter's
// own query, as before.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fleet/fleet_config.h"
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
  };
  Outcome outcome = Outcome::cancelled;
  RouteLease lease;
  double waited_seconds = 0;
};

// Single-threaded, like the Router it feeds from.
class WaitQueue {
 public:
  WaitQueue(boost::asio::any_io_executor executor, Router& router, fleet::QueueOptions options);
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
  // own query. Called when a slot frees and when an instance becomes ready.
  void dispatch(const std::string& model);

  // Ends the waits of `key`'s requests with key_revoked.
  void refuse_key(std::string_view key);

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
    double deficit = 0;  // tokens this key may still be served this round
    std::deque<std::shared_ptr<Waiter>> waiters;
  };
  struct Band {
    std::map<std::string, Lane, std::less<>> lanes;  // keys with waiters
    std::deque<std::string> ring;                    // the same keys, in round order
  };
  struct Line {
    std::deque<std::shared_ptr<Waiter>> retries;
    std::map<int, Band, std::greater<>> bands;  // highest priority first
    int size = 0;
  };
  void remove(Line& line, const std::shared_ptr<Waiter>& waiter);
  // Calls `f` with every waiter of `line`.
  template <class F>
  static void for_each_waiter(Line& line, F f);
  static void grant(Waiter& waiter, RouteLease lease);

  boost::asio::any_io_executor executor_;
  Router& router_;
  const fleet::QueueOptions options_;
  std::map<std::string, Line, std::less<>> lines_;
  bool closed_ = false;
};

}  // namespace switchyard::gateway
