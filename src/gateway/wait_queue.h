// Where requests wait, per model, when every slot of the model is busy: in
// the gateway, where they can be ordered, not inside an engine. FIFO for now;
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
  // the model's FIFO. `avoid` is never chosen (see Router::acquire).
  boost::asio::awaitable<Admission> acquire(const std::string& model,
                                            std::optional<std::size_t> avoid);

  // Hands free slots of `model` to its waiters, oldest first. Called when a
  // slot frees and when an instance becomes ready.
  void dispatch(const std::string& model);

  // Ends every wait with shutting_down.
  void release_all();

  int depth(const std::string& model) const;

 private:
  struct Waiter;
  boost::asio::any_io_executor executor_;
  Router& router_;
  const fleet::QueueOptions options_;
  std::map<std::string, std::deque<std::shared_ptr<Waiter>>> waiting_;
  bool closed_ = false;
};

}  // namespace switchyard::gateway
