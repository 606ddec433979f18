// Where requests wait, per model, when every slot of the model is busy (or
// its instances are still starting): in the gateway, where they can be
// ordered, not inside an engine. FIFO, with retries ahead of new arrivals;
// fairness across API keys and priorities will slot in at dispatch().
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fleet/fleet_config.h"
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
  // the model's line (a retry, which has waited its turn already, at its
  // front). The slot is chosen as Router::acquire chooses for `query`, whose
  // views must stay valid until this completes.
  // It waits at most `max_wait` (queue.max_wait, or a retry's remaining budget).
  boost::asio::awaitable<Admission> acquire(RouteQuery query, bool retry,
                                            std::chrono::milliseconds max_wait);

  // Hands free slots of `model` to its waiters in line order, each by its
  // own query. Called when a slot frees and when an instance becomes ready.
  void dispatch(const std::string& model);

  // Profiles: every waiter of `model` waits at least `bound` from now (a
  // switch holds the model; their queue.max_wait must not run out on it).
  void extend(const std::string& model, std::chrono::milliseconds bound);

  // Ends every wait with shutting_down.
  void release_all();

  int depth(std::string_view model) const;

 private:
  struct Waiter;
  boost::asio::any_io_executor executor_;
  Router& router_;
  const fleet::QueueOptions options_;
  std::map<std::string, std::deque<std::shared_ptr<Waiter>>, std::less<>> waiting_;
  bool closed_ = false;
};

}  // namespace switchyard::gateway
